//! The sandbox against the real kernel, with real processes.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use tool_sandbox::{Fallback, Network, Probe, Sandbox, SandboxMode, SandboxPolicy};

/// Whether the kernel has the layers; without them the test is skipped, except under CI.
fn layers() -> bool {
    let probe = Probe::get();
    if probe.landlock_abi.is_some() && probe.seccomp {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock and seccomp: {probe}");
    eprintln!("skipped: the kernel lacks Landlock or seccomp ({probe})");
    false
}

/// A new directory outside the temporary directory (which commands may write).
fn dir(name: &str) -> PathBuf {
    let base = outside_temp_base().join("tool-sandbox");
    std::fs::create_dir_all(&base).unwrap();
    let path = base.join(format!("{name}-{}-{}", std::process::id(), rand()));
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

fn rand() -> u64 {
    getrandom::u64().unwrap()
}

/// Runs `script` with `bash -c` in `cwd` under `policy`: exit code and combined output.
fn run(policy: &SandboxPolicy, cwd: &Path, script: &str) -> (i32, String) {
    let sandbox = Sandbox::new(policy.clone()).unwrap();
    let mut command = Command::new("bash");
    command.arg("-c").arg(format!("exec 2>&1; {script}")).current_dir(cwd);
    sandbox.apply(&mut command, cwd).unwrap();
    let out = command.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

struct Fixture {
    root: PathBuf,
    outside: PathBuf,
    policy: SandboxPolicy,
}

fn fixture(name: &str) -> Fixture {
    let root = dir(&format!("{name}-root"));
    let outside = dir(&format!("{name}-outside"));
    std::fs::write(outside.join("existing"), "before").unwrap();
    let policy = SandboxPolicy::workspace_write(&root);
    Fixture { root, outside, policy }
}

#[test]
fn writes_outside_the_root_are_refused_in_every_way_a_shell_writes() {
    if !layers() {
        return;
    }
    let fx = fixture("writes");
    let o = fx.outside.display();
    std::fs::write(fx.root.join("inside"), "data").unwrap();
    for script in [
        format!("echo x > {o}/redirect"),
        format!("echo x >> {o}/existing"),
        format!("cp inside {o}/copied"),
        format!("mv inside {o}/moved"),
        format!("ln inside {o}/hardlink"),
        format!("ln -s /etc/passwd {o}/symlink"),
        format!("touch {o}/touched"),
        format!("mkdir {o}/made"),
        format!("rm {o}/existing"),
        format!("truncate -s 0 {o}/existing"),
        format!("python3 -c \"open('{o}/python', 'w').write('x')\""),
        format!(
            "(setsid bash -c 'echo x > {o}/double-forked; echo $? > {}/double-status' &) ; sleep 0.5",
            fx.root.display()
        ),
    ] {
        let (code, out) = run(&fx.policy, &fx.root, &script);
        let entries: Vec<_> =
            std::fs::read_dir(&fx.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(entries, vec![std::ffi::OsString::from("existing")], "`{script}` wrote outside: {out}");
        assert_eq!(std::fs::read_to_string(fx.outside.join("existing")).unwrap(), "before", "{script}");
        if !script.contains("double") {
            assert_ne!(code, 0, "`{script}` succeeded: {out}");
        }
    }
    // The double-forked child may outlive its command: wait for it to say how its write went.
    let mut status = String::new();
    for _ in 0..200 {
        status = std::fs::read_to_string(fx.root.join("double-status")).unwrap_or_default();
        if status.ends_with('\n') {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status.trim(), "1");
    assert!(!fx.outside.join("double-forked").exists());
}

#[test]
fn a_compiled_program_is_confined_too() {
    if !layers() {
        return;
    }
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler");
        return;
    }
    let fx = fixture("compiled");
    let source = fx.root.join("w.c");
    std::fs::write(
        &source,
        "#include <fcntl.h>\n#include <stdio.h>\nint main(int c, char **v) { int fd = open(v[1], O_WRONLY|O_CREAT, 0644); \
         if (fd < 0) { perror(v[1]); return 1; } write(fd, \"x\", 1); return 0; }\n",
    )
    .unwrap();
    let (code, out) = run(
        &fx.policy,
        &fx.root,
        &format!("cc -o w w.c && ./w inside.txt && ./w {}/compiled", fx.outside.display()),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    assert_eq!(std::fs::read_to_string(fx.root.join("inside.txt")).unwrap(), "x");
    assert!(!fx.outside.join("compiled").exists());
}

#[test]
fn reads_work_and_the_root_and_the_temporary_directory_are_writable() {
    if !layers() {
        return;
    }
    let fx = fixture("reads");
    let tmp = std::env::temp_dir().join(format!("tool-sandbox-tmp-{}", rand()));
    let script = format!(
        "cat {o}/existing && head -c 4 /etc/passwd >/dev/null && mkdir -p sub/deep && echo y > sub/deep/f && \
         mv sub/deep/f g && ln -s g link && rm -r sub && echo t > {t} && cat {t} && rm {t} && echo done >/dev/null && echo ok",
        o = fx.outside.display(),
        t = tmp.display()
    );
    let (code, out) = run(&fx.policy, &fx.root, &script);
    assert_eq!((code, out.as_str()), (0, "beforet\nok\n"));
}

#[test]
fn protected_paths_stay_read_only_inside_the_root() {
    if !layers() {
        return;
    }
    if !Probe::get().can_protect_paths() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root and can make mount namespaces"
        );
        eprintln!("skipped: no mount namespaces here");
        return;
    }
    let fx = fixture("protected");
    std::env::set_current_dir(&fx.root).unwrap();
    std::fs::create_dir_all(fx.root.join(".git/hooks")).unwrap();
    std::fs::write(fx.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(fx.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    for script in [
        "echo evil > .git/hooks/pre-commit",
        "touch .git/hooks/pre-commit",
        "ln -s /bin/true .git/hooks/pre-commit",
        "echo evil >> .git/config",
        "rm .git/config",
        "mv .git/config .git/config.old",
        "mv .git .git-old",
        "rm -rf .git",
        "cd .git && echo evil > hooks/pre-commit",
        // Through the magic links of a process outside the sandbox, which see no read-only mounts.
        &format!("echo evil > /proc/{}/cwd/.git/hooks/pre-commit", std::process::id()),
        &format!("echo evil > /proc/{}/root{}/.git/hooks/pre-commit", std::process::id(), fx.root.display()),
    ] {
        let (code, out) = run(&fx.policy, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
        assert!(!fx.root.join(".git/hooks/pre-commit").exists(), "{script}");
        assert_eq!(std::fs::read_to_string(fx.root.join(".git/config")).unwrap(), "[core]\n", "{script}");
        assert!(fx.root.join(".git/hooks").is_dir(), "{script}");
    }
    // The rest of `.git` stays writable: git can still commit.
    let (code, out) =
        run(&fx.policy, &fx.root, "echo x > .git/index.lock && mv .git/index.lock .git/index && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
    // The mounts are the command's own: this process still sees the ordinary files.
    std::fs::write(fx.root.join(".git/hooks/pre-commit"), "fine").unwrap();
}

#[test]
fn a_loopback_connection_is_refused_with_the_network_off() {
    if !layers() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fx = fixture("network");
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let (code, out) = run(&fx.policy, &fx.root, &script);
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains("connected"), "{out}");
    // Unix sockets still work.
    let (code, out) = run(
        &fx.policy,
        &fx.root,
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"u\"); print(b.recv(1))'",
    );
    assert_eq!((code, out.as_str()), (0, "b'u'\n"));
    // Unconfined, the same connection is made.
    let (code, out) = run(&SandboxPolicy::off(), &fx.root, &script);
    assert_eq!((code, out.as_str()), (0, "connected\n"));
}

#[test]
fn the_proxy_port_alone_is_reachable() {
    if !layers() || Probe::get().landlock_abi < Some(4) {
        return;
    }
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (p, q) = (proxy.local_addr().unwrap().port(), other.local_addr().unwrap().port());
    let fx = fixture("proxy");
    let policy = fx.policy.clone().with_network(Network::Proxy { port: p });
    let (code, out) = run(&policy, &fx.root, &format!("exec 3<>/dev/tcp/127.0.0.1/{p} && echo proxy"));
    assert_eq!((code, out.as_str()), (0, "proxy\n"));
    let (code, out) = run(&policy, &fx.root, &format!("exec 3<>/dev/tcp/127.0.0.1/{q} && echo other"));
    assert_ne!(code, 0, "{out}");
}

#[test]
fn ptrace_and_new_namespaces_are_refused() {
    if !layers() {
        return;
    }
    let fx = fixture("syscalls");
    let (code, out) = run(&fx.policy, &fx.root, "unshare -U true");
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("Operation not permitted"), "{out}");
    let (code, out) = run(&fx.policy, &fx.root, "unshare -n true");
    assert_ne!(code, 0, "{out}");
    // Typing into the terminal the tools run in.
    let tiocsti = "python3 -c 'import pty, fcntl, termios; m, s = pty.openpty(); \
                   fcntl.ioctl(s, termios.TIOCSTI, b\"x\"); print(\"typed\")'";
    let (code, out) = run(&fx.policy, &fx.root, tiocsti);
    assert!(code != 0 && out.contains("Operation not permitted"), "{out}");
    let (_, unconfined) = run(&SandboxPolicy::off(), &fx.root, tiocsti);
    if unconfined == "typed\n" {
        eprintln!("TIOCSTI works unconfined here, and was refused in the sandbox");
    }
    let ptrace = "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); \
                  print(l.ptrace(0, 0, 0, 0), ctypes.get_errno())'";
    let (code, out) = run(&fx.policy, &fx.root, ptrace);
    assert_eq!((code, out.as_str()), (0, "-1 1\n"));
    if Command::new("strace").arg("-V").output().is_ok() {
        let (code, out) = run(&fx.policy, &fx.root, "strace -f true");
        assert_ne!(code, 0, "{out}");
    }
    // Unconfined, both work.
    let (code, out) = run(&SandboxPolicy::off(), &fx.root, "unshare -U true && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
}

#[test]
fn off_runs_unconfined_and_read_only_writes_nothing() {
    if !layers() {
        return;
    }
    let fx = fixture("modes");
    let (code, out) = run(&SandboxPolicy::off(), &fx.root, &format!("echo x > {}/off", fx.outside.display()));
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(fx.outside.join("off").exists());
    let (code, out) = run(
        &SandboxPolicy::read_only(),
        &fx.root,
        "echo x > inside; cat /etc/hostname > /dev/null && echo read",
    );
    assert_eq!(code, 0);
    assert!(out.contains("Permission denied") && out.ends_with("read\n"), "{out}");
    assert!(!fx.root.join("inside").exists());
}

#[test]
fn a_missing_layer_is_refused_with_the_way_out() {
    let policy = SandboxPolicy::workspace_write("/nonexistent").require_landlock_abi(999);
    let err = Sandbox::new(policy.clone()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("The workspace-write sandbox cannot be enforced on this system: "), "{text}");
    assert!(text.contains("Landlock ABI 999 is required, but the kernel offers"), "{text}");
    assert!(text.contains("`--sandbox off`"), "{text}");
    // With the best-effort fallback it runs, and says what is missing.
    let sandbox = Sandbox::new(policy.with_fallback(Fallback::BestEffort)).unwrap();
    assert!(sandbox.report().missing.iter().any(|m| m.contains("ABI 999")), "{:?}", sandbox.report());
    // Off never needs the kernel.
    let off = Sandbox::new(SandboxPolicy::off()).unwrap();
    assert_eq!(off.report().mode, SandboxMode::Off);
    assert_eq!(off.report().to_string(), "sandbox off (commands run unconfined)");
}

#[test]
fn the_report_names_the_layers() {
    if !layers() {
        return;
    }
    let sandbox = Sandbox::new(SandboxPolicy::workspace_write("/nonexistent")).unwrap();
    let report = sandbox.report();
    assert!(report.layers.contains(&"landlock") && report.layers.contains(&"seccomp"), "{report}");
    assert_eq!(report.landlock_abi, Probe::get().landlock_abi);
    let text = report.to_string();
    assert!(text.starts_with("sandbox workspace-write, Landlock ABI "), "{text}");
    let _ = std::io::stderr().write_all(format!("{text}\n").as_bytes());
}

include!("support/outside_temp.rs");
