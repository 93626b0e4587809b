//! Terminals: a command reaches the one it is given and those it makes, never another of the
//! user's (where it would read what is typed, type into it, or change its settings).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::sys::termios::{LocalFlags, tcgetattr};
use tool_sandbox::{Probe, Sandbox};

use super::{fixture, layers, mounts};

/// What the user typed on their terminal, not read yet.
const TYPED: &str = "hunter2";

/// A terminal of the user's: a new pseudo-terminal with [`TYPED`] waiting to be read, and its
/// name.
struct UserTerminal {
    master: OwnedFd,
    slave: OwnedFd,
    name: PathBuf,
}

impl UserTerminal {
    fn open() -> UserTerminal {
        let pty = nix::pty::openpty(None, None).unwrap();
        let name = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        nix::unistd::write(&pty.master, format!("{TYPED}\n").as_bytes()).unwrap();
        UserTerminal { master: pty.master, slave: pty.slave, name }
    }

    /// The index in its name.
    fn index(&self) -> &str {
        self.name.to_str().unwrap().trim_start_matches("/dev/pts/")
    }

    /// What is waiting to be read on `fd`, without waiting for more.
    fn pending(fd: impl AsFd) -> String {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        fcntl(fd.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
        let mut text = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = nix::unistd::read(fd.as_fd(), &mut buffer) {
            text.extend_from_slice(&buffer[..n]);
        }
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Checks that a command's attempts on this terminal left it as it was: what was typed is
    /// still there to be read, nothing was written to it, and it still echoes.
    fn assert_untouched(&self, out: &str) {
        assert!(!out.contains(TYPED), "the command read the user's terminal: {out}");
        for reached in ["read=0", "write=0", "stty=0", "proc=0", "other_name=0"] {
            assert!(!out.lines().any(|l| l == reached), "{reached}: {out}");
        }
        let shown = Self::pending(&self.master);
        assert!(!shown.contains("injected"), "the command wrote to the user's terminal: {shown:?}\n{out}");
        let echo = tcgetattr(&self.slave).unwrap().local_flags.contains(LocalFlags::ECHO);
        assert!(echo, "the command turned the user's terminal's echo off: {out}");
        assert_eq!(Self::pending(&self.slave), format!("{TYPED}\n"), "{out}");
    }

    /// A script that tries to read it, write to it and change its settings, by its name, another
    /// name, and through the host's descriptor in `/proc`.
    fn attempts(&self) -> String {
        let n = self.name.display();
        format!(
            "timeout 5 head -n 1 {n}; echo read=$?; echo injected > {n}; echo write=$?; \
             stty -F {n} -echo; echo stty=$?; timeout 5 head -n 1 /dev/pts/../pts/{i}; echo other_name=$?; \
             timeout 5 head -n 1 /proc/$PPID/fd/{fd}; echo proc=$?",
            i = self.index(),
            fd = self.slave.as_raw_fd(),
        )
    }
}

/// Runs `script` with `bash -c` in `cwd` in `sandbox`, with standard input from `/dev/null`
/// (a terminal there would be the command's own): exit code and combined output.
fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> (i32, String) {
    let mut command = Command::new("bash");
    command.arg("-c").arg(format!("exec 2>&1; {script}")).current_dir(cwd).stdin(Stdio::null());
    sandbox.apply(&mut command, cwd).unwrap();
    let out = command.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The probe of this machine, without namespaces: what a command gets where none can be made.
fn without_namespaces() -> Probe {
    Probe { mount_namespace: false, user_namespaces: false, network_namespace: false, ..Probe::get() }
}

#[test]
fn another_terminal_of_the_user_is_neither_readable_nor_writable() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("other-terminal");
    let user = UserTerminal::open();
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let (_, out) = run(&sandbox, &fx.root, &format!("{}; echo pts: $(ls /dev/pts)", user.attempts()));
    user.assert_untouched(&out);
    // The host's terminals are not there at all: only the command's own instance.
    assert!(out.lines().any(|l| l == "pts: ptmx"), "{out}");
    assert!(sandbox.report().layers.contains(&"own-terminals"), "{}", sandbox.report());
}

#[test]
fn without_a_mount_namespace_no_terminal_is_reachable_by_name() {
    if !layers() {
        return;
    }
    let fx = fixture("no-namespace-terminal");
    let user = UserTerminal::open();
    let sandbox = Sandbox::with_probe(fx.policy.clone(), without_namespaces()).unwrap();
    let (_, out) = run(&sandbox, &fx.root, &user.attempts());
    user.assert_untouched(&out);
    assert!(!sandbox.report().layers.contains(&"own-terminals"), "{}", sandbox.report());
    assert!(sandbox.report().to_string().contains("no pseudo-terminal but the one"), "{}", sandbox.report());
    // Nor can the command open one it makes: failing closed.
    let (_, out) = run(&sandbox, &fx.root, "script -qc 'echo made' /dev/null; echo script=$?");
    assert!(out.lines().any(|l| l.starts_with("script=") && l != "script=0"), "{out}");
    // Reading elsewhere still works, and so do the devices every command uses.
    let (code, out) = run(
        &sandbox,
        &fx.root,
        "head -c 4 /etc/passwd > /dev/null && head -c 4 /dev/urandom | wc -c && ls /dev/pts >/dev/null && echo listed",
    );
    assert_eq!((code, out.as_str()), (0, "4\nlisted\n"));
}

#[test]
fn a_command_makes_terminals_of_its_own() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("own-terminals");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let python = "import os, pty\npid, fd = pty.fork()\nif pid == 0:\n    print('child', os.ttyname(0), flush=True)\n    os._exit(0)\n\
                  out = b''\nwhile True:\n    try:\n        chunk = os.read(fd, 100)\n    except OSError:\n        break\n    if not chunk:\n        break\n    out += chunk\n\
                  os.waitpid(pid, 0)\nprint(out.decode().strip())";
    let script = format!(
        "script -qc 'echo made; tty' /dev/null | tr -d '\\r'; echo script=${{PIPESTATUS[0]}}; python3 -c \"{python}\"; \
         echo pts: $(ls /dev/pts)"
    );
    let (code, out) = run(&sandbox, &fx.root, &script);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["made", "/dev/pts/0", "script=0", "child /dev/pts/0", "pts: ptmx"], "{out}");
}

#[test]
fn a_given_terminal_keeps_its_name_and_is_the_only_one() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("given-terminal");
    let user = UserTerminal::open();
    let given = nix::pty::openpty(None, None).unwrap();
    let name = std::fs::read_link(format!("/proc/self/fd/{}", given.slave.as_raw_fd())).unwrap();
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    // As `bash`'s terminal commands start: the terminal is the command's controlling terminal
    // (taken here with `TIOCSCTTY` 0, as `forkpty` takes one) and its standard descriptors.
    let script = format!(
        "tty; echo pts: $(ls /dev/pts); echo through-tty > /dev/tty && echo tty=$?; {}; \
         python3 -c 'import os; os.openpty()' 2>&1 | tail -n 1",
        user.attempts()
    );
    let take = "import os, fcntl, sys, termios\ntry:\n    os.setsid()\nexcept OSError:\n    pass\n\
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)\nos.execvp('bash', ['bash', '-c', sys.argv[1]])";
    let mut command = Command::new("python3");
    command
        .args(["-c", take, &script])
        .current_dir(&fx.root)
        .stdin(Stdio::from(given.slave.try_clone().unwrap()))
        .stdout(Stdio::from(given.slave.try_clone().unwrap()))
        .stderr(Stdio::from(given.slave));
    sandbox.apply(&mut command, &fx.root).unwrap();
    let status = command.status().unwrap();
    let out = UserTerminal::pending(&given.master).replace('\r', "");
    assert!(status.success(), "{out}");
    let index = name.to_str().unwrap().trim_start_matches("/dev/pts/");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[..3], [name.to_str().unwrap(), &format!("pts: {index}"), "through-tty"], "{out}");
    user.assert_untouched(&out);
    // It makes none: no devpts instance beside `/dev/ptmx`.
    assert!(out.trim_end().ends_with("OSError: [Errno 19] No such device"), "{out}");
}
