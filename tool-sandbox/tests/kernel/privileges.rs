//! What a command holds besides files and network: capabilities, descriptors, a terminal, other
//! processes' limits and priorities, shared memory, System V IPC.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use tool_sandbox::{Probe, Sandbox, SandboxPolicy};

use super::{fixture, layers, run};

/// The script the host process runs sandboxed (see [`host`]).
const HOST_SCRIPT: &str = "TOOL_SANDBOX_TEST_HOST_SCRIPT";
/// Set: the host makes the command a process group leader first (`process_group(0)`).
const HOST_GROUP: &str = "TOOL_SANDBOX_TEST_HOST_GROUP";
/// A variable only the host's environment holds.
const MARKER: &str = "TOOL_SANDBOX_TEST_HOST_MARKER";
/// The line of the host's output that holds its report.
const REPORT: &str = "host report: ";

/// What the host says of the command it ran and of itself.
#[derive(Debug)]
struct HostReport {
    code: i32,
    output: String,
    /// The host could open its controlling terminal, outside the sandbox.
    terminal: bool,
    nofile: (u64, u64),
    nofile_before: (u64, u64),
    nice: String,
    nice_before: String,
    cpus: String,
    cpus_before: String,
}

/// Not a test: the host process of [`as_host`], which runs this test binary again with this
/// test alone and [`HOST_SCRIPT`] set. Without the variable it does nothing.
#[test]
fn host() {
    let Ok(script) = std::env::var(HOST_SCRIPT) else { return };
    let cwd = std::env::current_dir().unwrap();
    let terminal = std::fs::File::open("/dev/tty").is_ok();
    let nofile_before = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let (nice_before, cpus_before) = (own_nice(), own_cpus());
    let sandbox = Sandbox::new(SandboxPolicy::workspace_write(&cwd)).unwrap();
    let mut command = Command::new("bash");
    command.arg("-c").arg(format!("exec 2>&1; {script}")).current_dir(&cwd).stdin(Stdio::null());
    if std::env::var_os(HOST_GROUP).is_some() {
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
    }
    sandbox.apply(&mut command, &cwd).unwrap();
    let out = command.output().unwrap();
    // The limit first: had the command lowered it, opening files would fail.
    let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let report = serde_json::json!({
        "code": out.status.code().unwrap_or(-1),
        "output": String::from_utf8_lossy(&out.stdout),
        "terminal": terminal,
        "nofile": [nofile.0, nofile.1],
        "nofile_before": [nofile_before.0, nofile_before.1],
        "nice": own_nice(),
        "nice_before": nice_before,
        "cpus": own_cpus(),
        "cpus_before": cpus_before,
    });
    println!("{REPORT}{report}");
}

/// This process's nice value (field 19 of `/proc/self/stat`).
fn own_nice() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name.split_whitespace().nth(16).unwrap_or("?").to_owned()
}

/// The CPUs this process may run on.
fn own_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("?").trim().to_owned()
}

/// Runs `script` sandboxed from a host process of its own: this test binary again, running
/// [`host`] in `cwd` as the leader of a new session whose controlling terminal is a new
/// pseudo-terminal, with [`MARKER`] in its environment. The script's `$PPID` is the host.
fn as_host(cwd: &Path, script: &str, group: bool) -> HostReport {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut command = Command::new("setsid");
    command
        .arg("--ctty")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "privileges::host", "--nocapture", "--test-threads=1", "-q"])
        .current_dir(cwd)
        .env(HOST_SCRIPT, script)
        .env(MARKER, marker())
        .stdin(Stdio::from(pty.slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if group {
        command.env(HOST_GROUP, "1");
    }
    let out = command.output().unwrap();
    drop(pty.master);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix(REPORT)) else {
        panic!("the host said nothing: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    };
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let pair = |key: &str| (v[key][0].as_u64().unwrap(), v[key][1].as_u64().unwrap());
    let text = |key: &str| v[key].as_str().unwrap().to_owned();
    HostReport {
        code: v["code"].as_i64().unwrap() as i32,
        output: text("output"),
        terminal: v["terminal"].as_bool().unwrap(),
        nofile: pair("nofile"),
        nofile_before: pair("nofile_before"),
        nice: text("nice"),
        nice_before: text("nice_before"),
        cpus: text("cpus"),
        cpus_before: text("cpus_before"),
    }
}

/// The value of [`MARKER`]: a secret of the host.
fn marker() -> String {
    format!("secret-{}", std::process::id())
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The capability sets in `/proc/self/status` of a command, by name (`CapEff`, ...), and
/// `NoNewPrivs`.
fn status_fields(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')))
        .unwrap_or_else(|| panic!("no {name} in {out}"))
        .trim()
        .to_owned()
}

#[test]
fn a_command_holds_no_capability() {
    if !layers() {
        return;
    }
    let fx = fixture("capabilities");
    let (code, out) =
        run(&fx.policy, &fx.root, "cat /proc/self/status; echo uid_map: $(cat /proc/self/uid_map)");
    assert_eq!(code, 0, "{out}");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(status_fields(&out, set), "0000000000000000", "{set}: {out}");
    }
    assert_eq!(status_fields(&out, "NoNewPrivs"), "1");
    // No core dump unless the command asks for one.
    let core = run(&fx.policy, &fx.root, "ulimit -c; ulimit -c $(ulimit -H -c) && echo raised");
    assert_eq!(core, (0, "0\nraised\n".to_owned()));
    // The bounding set can be emptied with CAP_SETPCAP: as root, or in a user namespace (where the
    // command has every capability until it drops them). An ordinary user outside one keeps it,
    // which `no_new_privs` makes useless: no program it runs can gain a capability.
    let identity =
        status_fields(&out, "uid_map").split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"];
    if is_root() || !identity {
        assert_eq!(status_fields(&out, "CapBnd"), "0000000000000000", "{out}");
    } else {
        eprintln!("an ordinary user outside a user namespace: the bounding set stays as it was");
    }
    // Programs that ask for capabilities get none: as root, `ping`'s raw socket or a mount.
    if is_root() {
        let (code, out) = run(&fx.policy, &fx.root, "chown 1:1 . && echo changed");
        assert!(code != 0 && !out.contains("changed"), "{out}");
    }
}

#[test]
fn the_host_environment_is_not_readable() {
    if !layers() {
        return;
    }
    let fx = fixture("environ");
    let host = as_host(&fx.root, "tr '\\0' '\\n' < /proc/$PPID/environ", false);
    assert!(!host.output.contains(&marker()), "{}", host.output);
    assert_ne!(host.code, 0, "{}", host.output);
    // The parent of an unconfined command reads it.
    let (code, out) = run(
        &SandboxPolicy::off(),
        &fx.root,
        &format!("tr '\\0' '\\n' < /proc/{}/environ", std::process::id()),
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn the_host_limits_priority_and_processors_stay_as_they_were() {
    if !layers() {
        return;
    }
    let fx = fixture("limits");
    // Every processor but the host's first, or (on one processor) none left to take away.
    let script = "prlimit --pid $PPID --nofile=3:3; echo prlimit=$?; \
                  prlimit --pid $PPID --nofile --noheadings --output SOFT > /dev/null; echo read=$?; \
                  renice -n 5 -p $PPID; echo renice=$?; \
                  taskset -pc 0 $PPID; echo taskset=$?; \
                  ionice -c 3 -p $PPID; echo ionice=$?; \
                  prlimit --nofile=100:100 true; echo own=$?; nice -n 3 true; echo own_nice=$?";
    let host = as_host(&fx.root, script, false);
    let out = &host.output;
    for refused in ["prlimit=1", "renice=1", "taskset=1", "ionice=1"] {
        assert!(out.lines().any(|l| l == refused), "{refused}: {out}");
    }
    // Reading another process's limits, and changing its own, stay allowed.
    for allowed in ["read=0", "own=0", "own_nice=0"] {
        assert!(out.lines().any(|l| l == allowed), "{allowed}: {out}");
    }
    assert_eq!(host.nofile, host.nofile_before, "{out}");
    assert_eq!(host.nice, host.nice_before, "{out}");
    assert_eq!(host.cpus, host.cpus_before, "{out}");
}

#[test]
fn an_inherited_descriptor_does_not_reach_a_command() {
    if !layers() {
        return;
    }
    let fx = fixture("descriptors");
    let name = format!("inherited-{}", std::process::id());
    let file = std::fs::File::create(fx.outside.join(&name)).unwrap();
    // As a launcher that forgot `O_CLOEXEC` would leave it.
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty())).unwrap();
    let fd = file.as_raw_fd();
    let script = format!("ls -l /proc/$$/fd; echo written >&{fd} && echo wrote");
    let (_, out) = run(&SandboxPolicy::off(), &fx.root, &script);
    assert!(out.contains(&name) && out.contains("wrote"), "unconfined, the descriptor is inherited: {out}");
    let (_, out) = run(&fx.policy, &fx.root, &script);
    assert!(!out.contains(&name) && !out.contains("wrote"), "{out}");
    // Standard input, output and error are the command's.
    let (code, out) = run(&fx.policy, &fx.root, "echo in | (read x; echo $x) && echo err >&2");
    assert_eq!((code, out.as_str()), (0, "in\nerr\n"));
    drop(file);
    assert_eq!(std::fs::read_to_string(fx.outside.join(&name)).unwrap(), "written\n");
}

#[test]
fn a_command_has_no_controlling_terminal() {
    if !layers() {
        return;
    }
    let fx = fixture("terminal");
    let script = "exec 3</dev/tty && echo opened; echo session=$(ps -o sid= -p $$ | tr -d ' ') pid=$$";
    // Started as a process of its own, and as the leader of a process group (which cannot start
    // a session: it leaves the host's terminal instead).
    for group in [false, true] {
        let host = as_host(&fx.root, script, group);
        assert!(host.terminal, "the host has a controlling terminal");
        assert!(!host.output.contains("opened"), "group {group}: {}", host.output);
        assert!(host.output.contains("No such device or address"), "group {group}: {}", host.output);
        if !group {
            let line = host.output.lines().find(|l| l.starts_with("session=")).unwrap();
            let (sid, pid) = line.split_once(' ').unwrap();
            assert_eq!(sid.trim_start_matches("session="), pid.trim_start_matches("pid="), "{line}");
        }
    }
}

#[test]
fn kernel_logs_hangups_and_other_processes_memory_are_refused() {
    if !layers() {
        return;
    }
    let fx = fixture("refused-calls");
    // Each call with harmless arguments: `EPERM` (1) from the filter, another error or a result
    // without it. `vhangup` would hang up the host's terminal: only the host's own made here.
    let calls = [
        ("fanotify_init", format!("{}, 0, 0", libc::SYS_fanotify_init)),
        ("syslog", format!("{}, 10, 0, 0", libc::SYS_syslog)),
        ("vhangup", format!("{}", libc::SYS_vhangup)),
        ("process_madvise", format!("{}, -1, 0, 0, 0, 0", libc::SYS_process_madvise)),
        ("process_vm_writev", format!("{}, 1, 0, 0, 0, 0, 0", libc::SYS_process_vm_writev)),
        // Every process of a user (one with none, here).
        ("setpriority_user", format!("{}, 2, 4000000, 10", libc::SYS_setpriority)),
    ];
    let mut script = String::from(
        "import ctypes\nl = ctypes.CDLL(None, use_errno=True)\nl.syscall.restype = ctypes.c_long\n",
    );
    for (name, args) in &calls {
        script.push_str(&format!(
            "r = l.syscall({args}); print('{name}', r, ctypes.get_errno() if r < 0 else 0)\n"
        ));
    }
    let host = as_host(&fx.root, &format!("python3 -c \"{script}\""), false);
    for (name, _) in &calls {
        assert!(host.output.lines().any(|l| l == format!("{name} -1 1")), "{name}: {}", host.output);
    }
    // Its own terminal: taking one by force is refused; a new terminal of its own, as `forkpty`
    // makes one, works.
    let (code, out) = run(
        &fx.policy,
        &fx.root,
        "python3 -c \"import os, pty, fcntl, termios\ntry:\n    os.setsid()\nexcept OSError:\n    pass\nm, s = pty.openpty()\ntry:\n    fcntl.ioctl(s, termios.TIOCSCTTY, 1)\n    print('stolen')\nexcept OSError as e:\n    print('refused', e.errno)\npid, fd = os.forkpty()\nif pid == 0:\n    os._exit(7)\nprint('forkpty', os.waitpid(pid, 0)[1] >> 8)\"",
    );
    assert_eq!((code, out.as_str()), (0, "refused 1\nforkpty 7\n"));
}

#[test]
fn shared_memory_is_the_commands_own() {
    if !layers() {
        return;
    }
    let fx = fixture("shm");
    let name = format!("tool-sandbox-test-{}", std::process::id());
    let outside = Path::new("/dev/shm").join(&name);
    std::fs::write(&outside, "host").unwrap();
    let script = format!(
        "cat /dev/shm/{name}; echo; echo command > /dev/shm/{name}-new && echo wrote; echo x > /dev/shm/{name}"
    );
    let (_, out) = run(&fx.policy, &fx.root, &script);
    let host = std::fs::read_to_string(&outside).unwrap();
    let leaked = Path::new("/dev/shm").join(format!("{name}-new")).exists();
    let _ = std::fs::remove_file(&outside);
    let _ = std::fs::remove_file(Path::new("/dev/shm").join(format!("{name}-new")));
    assert_eq!(host, "host", "{out}");
    assert!(!leaked, "{out}");
    if Probe::get().can_protect_paths() {
        // A mount namespace of its own: a /dev/shm of the sandbox's own, which it may write, and
        // where POSIX semaphores work.
        assert!(!out.contains("host"), "the host's shared memory was read: {out}");
        assert!(out.contains("wrote"), "{out}");
        let semaphore = "python3 -c 'import multiprocessing; multiprocessing.Lock(); print(\"locked\")'";
        assert_eq!(run(&fx.policy, &fx.root, semaphore), (0, "locked\n".to_owned()));
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root and can make mount namespaces"
        );
        assert!(!out.contains("wrote"), "{out}");
    }
}

#[test]
fn a_command_leaves_no_set_id_file_behind() {
    if !layers() {
        return;
    }
    let fx = fixture("set-id");
    // Each way of giving a file a mode, with the set-user-ID or set-group-ID bit: refused with
    // `EPERM` (1). `openat2`, whose mode a filter cannot read, answers `ENOSYS` (38), as on a
    // kernel without it.
    let python = "import ctypes, os\n\
        l = ctypes.CDLL(None, use_errno=True)\n\
        def errno(call):\n    try:\n        call()\n        return 0\n    except OSError as e:\n        return e.errno\n\
        def raw(*args):\n    r = l.syscall(*args)\n    return ctypes.get_errno() if r < 0 else 0\n\
        print('open', errno(lambda: os.open('opened', os.O_CREAT | os.O_WRONLY, 0o4755)))\n\
        print('open_gid', errno(lambda: os.open('opened-gid', os.O_CREAT | os.O_WRONLY, 0o2755)))\n\
        print('tmpfile', errno(lambda: os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)))\n\
        print('mknod', errno(lambda: os.mknod('node', 0o100000 | 0o4755)))\n\
        fd = os.open('plain', os.O_CREAT | os.O_WRONLY, 0o755)\n\
        print('fchmod', errno(lambda: os.fchmod(fd, 0o4755)))\n\
        print('fchmodat2', raw(452, -100, b'plain', 0o4755, 0))\n\
        print('openat2', raw(437, -100, b'opened2', ctypes.create_string_buffer(24), 24))\n\
        print('mkdir', errno(lambda: os.mkdir('dir', 0o6755)))\n\
        print('plain', errno(lambda: os.chmod('plain', 0o750)))";
    let script = format!(
        "touch f g; chmod 4755 f; echo chmod=$?; chmod g+s g; echo chmod_g=$?; chmod u+x,o-r f; echo plain=$?; \
         python3 -c \"{python}\"; install -m 4755 /dev/null installed; echo install=$?"
    );
    let (_, out) = run(&fx.policy, &fx.root, &script);
    for expected in [
        "chmod=1",
        "chmod_g=1",
        "plain=0",
        "open 1",
        "open_gid 1",
        "tmpfile 1",
        "mknod 1",
        "fchmod 1",
        "fchmodat2 1",
        "openat2 38",
        "mkdir 0",
        "plain 0",
    ] {
        assert!(out.lines().any(|l| l == expected), "{expected}: {out}");
    }
    assert!(!out.lines().any(|l| l == "install=0"), "{out}");
    for entry in std::fs::read_dir(&fx.root).unwrap() {
        let entry = entry.unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(&entry.metadata().unwrap().permissions());
        assert_eq!(mode & 0o6000, 0, "{:?} has mode {mode:o}: {out}", entry.path());
    }
    // Unconfined, the same script leaves set-user-ID files (the check above can fail).
    let (_, out) = run(&SandboxPolicy::off(), &fx.outside, &script);
    assert!(out.lines().any(|l| l == "chmod=0"), "{out}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(fx.outside.join("f")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o4000, 0o4000, "{mode:o}");
}

#[test]
fn system_v_ipc_is_the_commands_own() {
    if !layers() {
        return;
    }
    let fx = fixture("sysv-ipc");
    // A segment and a message queue of the host's, as a database or an X server keeps them (they
    // outlive the process that made them).
    let key = 0x5eed_0000 | (std::process::id() & 0xffff);
    let host = |code: &str| {
        let program = format!("import ctypes\nc = ctypes.CDLL(None, use_errno=True)\nk = {key}\n{code}");
        let out = Command::new("python3").arg("-c").arg(program).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    host("assert c.shmget(k, 4096, 0o1600) >= 0 and c.msgget(k, 0o1600) >= 0");
    let script = format!(
        "python3 -c 'import ctypes\n\
         c = ctypes.CDLL(None, use_errno=True)\n\
         print(\"segment\", c.shmget({key}, 0, 0) >= 0 or ctypes.get_errno())\n\
         print(\"queue\", c.msgget({key}, 0) >= 0 or ctypes.get_errno())\n\
         print(\"own\", c.shmget(0, 4096, 0o1600) >= 0)'"
    );
    let (code, out) = run(&fx.policy, &fx.root, &script);
    host("c.shmctl(c.shmget(k, 0, 0), 0, None)\nc.msgctl(c.msgget(k, 0), 0, None)");
    if Probe::get().can_protect_paths() {
        // An IPC namespace of its own: the host's keys name nothing there, and its own work.
        assert_eq!((code, out.as_str()), (0, "segment 2\nqueue 2\nown True\n"));
    } else {
        // Refused by seccomp (EPERM).
        assert_eq!((code, out.as_str()), (0, "segment 1\nqueue 1\nown False\n"));
    }
}
