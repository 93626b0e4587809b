//! The sandbox against the real kernel, with real processes.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use tool_sandbox::{Fallback, Network, NetworkNamespace, Probe, Sandbox, SandboxMode, SandboxPolicy};

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

/// Whether commands get a mount namespace of their own here (read-only mounts, placeholders, a
/// devpts instance); without one the test is skipped, except under CI (which runs as root).
fn mounts() -> bool {
    if Probe::get().can_protect_paths() {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root and can make mount namespaces");
    eprintln!("skipped: no mount namespaces here");
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
    run_in(&Sandbox::new(policy.clone()).unwrap(), cwd, script)
}

/// Runs `script` as [`run`] does, in a sandbox made already.
fn run_in(sandbox: &Sandbox, cwd: &Path, script: &str) -> (i32, String) {
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
    let script = format!(
        "cat {o}/existing && head -c 4 /etc/passwd >/dev/null && mkdir -p sub/deep && echo y > sub/deep/f && \
         mv sub/deep/f g && ln -s g link && rm -r sub && echo t > $TMPDIR/t && cat $TMPDIR/t && rm $TMPDIR/t && \
         echo done >/dev/null && echo ok",
        o = fx.outside.display(),
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
    // `.git` is read-only as a whole by default; with git writes allowed, the rest of `.git`
    // is writable: git can commit.
    let (code, out) = run(&fx.policy, &fx.root, "echo x > .git/index.lock");
    assert_ne!(code, 0, "{out}");
    let git = fx.policy.clone().with_git_writes(true);
    let (code, out) =
        run(&git, &fx.root, "echo x > .git/index.lock && mv .git/index.lock .git/index && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
    let (code, out) = run(&git, &fx.root, "echo evil > .git/hooks/pre-commit || echo evil >> .git/config");
    assert_ne!(code, 0, "{out}");
    // The mounts are the command's own: this process still sees the ordinary files.
    std::fs::write(fx.root.join(".git/hooks/pre-commit"), "fine").unwrap();
}

/// A repository checked out inside the workspace, a package's agent settings and an editor's
/// tasks below the top are read-only as those at the top are, down to the depth looked in; past
/// the most names looked for, no command starts.
#[test]
fn protected_names_below_the_top_stay_read_only() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("nested");
    for dir in ["vendor/lib/.git/hooks", "packages/app/.claude", "web/.vscode", "a/b/c/.claude"] {
        std::fs::create_dir_all(fx.root.join(dir)).unwrap();
    }
    std::fs::write(fx.root.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    std::fs::write(fx.root.join("packages/app/.claude/settings.json"), "{}").unwrap();
    std::fs::write(fx.root.join("packages/CLAUDE.md"), "# rules\n").unwrap();
    let unchanged = |script: &str| {
        assert_eq!(
            std::fs::read_to_string(fx.root.join("vendor/lib/.git/config")).unwrap(),
            "[core]\n",
            "{script}"
        );
        assert!(!fx.root.join("vendor/lib/.git/hooks/pre-commit").exists(), "{script}");
        assert_eq!(
            std::fs::read_to_string(fx.root.join("packages/app/.claude/settings.json")).unwrap(),
            "{}"
        );
        assert_eq!(std::fs::read_to_string(fx.root.join("packages/CLAUDE.md")).unwrap(), "# rules\n");
        assert!(!fx.root.join("web/.vscode/tasks.json").exists(), "{script}");
    };
    for script in [
        "echo evil > vendor/lib/.git/hooks/pre-commit",
        "echo evil >> vendor/lib/.git/config",
        "rm -rf vendor/lib/.git",
        "mv vendor/lib/.git vendor/lib/git-old",
        // Moved a level deeper, where the next command would not look.
        "mkdir -p vendor/x && mv vendor/lib vendor/x/lib",
        "mkdir x && mv vendor x/",
        "echo '{\"sandbox\":{\"enabled\":false}}' > packages/app/.claude/settings.json",
        "echo evil >> packages/CLAUDE.md",
        "echo '{}' > web/.vscode/tasks.json",
        "mv web/.vscode web/vscode-old",
    ] {
        let (code, out) = run(&fx.policy, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
        unchanged(script);
        assert!(fx.root.join("vendor/lib/.git").is_dir() && fx.root.join("web/.vscode").is_dir(), "{script}");
    }
    // What is not protected there stays writable; a level deeper than looked in is not protected.
    let (code, out) =
        run(&fx.policy, &fx.root, "echo x > vendor/lib/lib.rs && echo x > a/b/c/.claude/x && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
    let shallow = SandboxPolicy { protected_depth: 1, ..fx.policy.clone() };
    let (code, out) = run(&shallow, &fx.root, "echo x > web/.vscode/tasks.json && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"), "the top alone");
    // A command that made more names than are looked for stops every later command, rather
    // than leave one that was there before unprotected.
    let (code, out) =
        run(&fx.policy, &fx.root, "for i in $(seq 0 1100); do mkdir -p many/$i/.claude; done; echo made");
    assert_eq!((code, out.as_str()), (0, "made\n"));
    let mut command = Command::new("true");
    let refused =
        Sandbox::new(fx.policy.clone()).unwrap().apply(&mut command, &fx.root).unwrap_err().to_string();
    assert!(refused.contains("more than 1024 protected names"), "{refused}");
    assert!(refused.contains(&fx.root.display().to_string()), "{refused}");
    std::fs::remove_dir_all(&fx.root).unwrap();
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

/// Whether this process can make a network namespace; without one the test is skipped (it is
/// an added layer, which no machine is required to offer).
fn network_namespace() -> bool {
    if Probe::get().network_namespace {
        return true;
    }
    eprintln!(
        "skipped: this process can make no network namespace (it needs CAP_SYS_ADMIN or unprivileged user \
         namespaces: {})",
        Probe::get()
    );
    false
}

/// Python that connects to each `(name, host, port)` and prints `name connected` or
/// `name refused ERRNO`.
fn connect_script(targets: &[(&str, &str, u16)]) -> String {
    let mut script = String::from(
        "import socket\n\
         def attempt(name, host, port):\n    \
             try:\n        \
                 s = socket.create_connection((host, port), timeout=5)\n        \
                 print(name, 'connected')\n    \
             except OSError as e:\n        \
                 print(name, 'refused', e.errno)\n",
    );
    for (name, host, port) in targets {
        script.push_str(&format!("attempt('{name}', '{host}', {port})\n"));
    }
    format!("python3 -c \"{script}\"")
}

/// A local address of this machine that is not loopback, if it has one (the one it would reach
/// a documentation address from; nothing is sent).
fn other_local_address() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("198.51.100.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// How many connections `listener` has waiting, accepting them.
fn accepted(listener: &std::net::TcpListener) -> usize {
    listener.set_nonblocking(true).unwrap();
    std::iter::from_fn(|| listener.accept().ok()).count()
}

#[test]
fn in_a_network_namespace_the_proxy_is_the_only_thing_reachable() {
    if !layers() || Probe::get().landlock_abi < Some(4) || !network_namespace() {
        return;
    }
    let fx = fixture("netns");
    let (namespace, proxy) = NetworkNamespace::with_listener().unwrap();
    let port = proxy.local_addr().unwrap().port();
    // Listeners on the same port outside the namespace, where Landlock's TCP rule alone would
    // let a command reach them: another loopback address, IPv6 loopback, this machine's other
    // address, and, when the port is free here too, 127.0.0.1 itself.
    // A port the namespace picked may be taken here (by a listener on every address, say):
    // that address is then left out, but 127.0.0.2 or ::1 must be there.
    let mut outside = Vec::new();
    for (name, host) in [("loopback2", "127.0.0.2"), ("ipv6", "::1")] {
        match std::net::TcpListener::bind((host, port)) {
            Ok(listener) => outside.push((name, host.to_owned(), listener)),
            Err(e) => eprintln!("{name}: {host}:{port} cannot be listened on here ({e}); left out"),
        }
    }
    assert!(!outside.is_empty(), "no listener could be made on port {port}");
    if let Some((ip, listener)) =
        other_local_address().and_then(|ip| Some((ip, std::net::TcpListener::bind((ip, port)).ok()?)))
    {
        outside.push(("machine", ip.to_string(), listener));
    }
    // And 127.0.0.1 on this side, when the port is free here too: the command's 127.0.0.1 is the
    // namespace's, where the proxy listens.
    let host_loopback = std::net::TcpListener::bind(("127.0.0.1", port)).ok();
    let policy = fx.policy.clone().with_network(Network::Proxy { port });
    let sandbox = Sandbox::new(policy.clone()).unwrap().in_network_namespace(namespace);
    let report = sandbox.report();
    assert!(report.layers.contains(&"network-namespace"), "{report}");
    assert!(!report.to_string().contains("NOT ENFORCED: the proxy alone"), "{report}");
    let mut targets = vec![("proxy", "127.0.0.1", port)];
    targets.extend(outside.iter().map(|(name, host, _)| (*name, host.as_str(), port)));
    let script = connect_script(&targets);
    let (code, out) = run_in(&sandbox, &fx.root, &script);
    assert_eq!(code, 0, "{out}");
    assert!(out.lines().any(|l| l == "proxy connected"), "{out}");
    assert_eq!(accepted(&proxy), 1, "{out}");
    if let Some(host_loopback) = &host_loopback {
        assert_eq!(accepted(host_loopback), 0, "127.0.0.1 outside the namespace was reached: {out}");
    }
    for (name, host, listener) in &outside {
        // Refused (nothing listens there in the namespace) or unreachable (no route out).
        assert!(
            out.lines().any(|l| l == format!("{name} refused 111") || l == format!("{name} refused 101")),
            "{name} ({host}:{port}): {out}"
        );
        assert_eq!(accepted(listener), 0, "{name} ({host}:{port}) was reached: {out}");
    }
    // Without the namespace, the report says what is open, and the same command reaches the
    // other loopback address: what the namespace closes.
    let bare = Sandbox::new(policy).unwrap();
    assert!(!bare.report().layers.contains(&"network-namespace"));
    assert!(
        bare.report().to_string().contains(&format!(
            "NOT ENFORCED: the proxy alone: Landlock's TCP rule allows port {port} on every address"
        )),
        "{}",
        bare.report()
    );
    let (name, host, listener) = &outside[0];
    let (_, out) = run_in(&bare, &fx.root, &connect_script(&[(name, host, port)]));
    assert_eq!(out, format!("{name} connected\n"));
    assert_eq!(accepted(listener), 1);
}

#[test]
fn with_the_network_off_commands_run_in_an_empty_network_namespace() {
    if !layers() || !network_namespace() {
        return;
    }
    let fx = fixture("netns-off");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    assert!(sandbox.report().layers.contains(&"network-namespace"), "{}", sandbox.report());
    // Only a loopback interface, and down; the machine's interfaces are not there.
    let (code, out) = run_in(&sandbox, &fx.root, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
    assert_eq!((code, out.as_str()), (0, "lo\n"));
    let (_, unconfined) = run(&SandboxPolicy::off(), &fx.root, "cat /proc/net/dev | tail -n +3 | wc -l");
    eprintln!("interfaces outside the namespace: {unconfined}");
    // An abstract Unix socket of this process is out of reach (it lives in another namespace).
    let name = format!("tool-sandbox-test-{}", std::process::id());
    let listener = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap(),
    )
    .unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect(b'\\0{name}'); print('connected')\""
    );
    let (code, out) = run_in(&sandbox, &fx.root, &connect);
    assert_ne!(code, 0, "{out}");
    let (code, out) = run(&SandboxPolicy::off(), &fx.root, &connect);
    assert_eq!((code, out.as_str()), (0, "connected\n"));
    drop(listener);
}

/// Python that listens on a TCP port of 127.0.0.1 and connects to it: `listening`, `served`,
/// or `refused ERRNO` at the step that failed.
const LISTEN_AND_CONNECT: &str = "python3 -c \"
import socket
try:
    s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('listening')
    socket.create_connection(s.getsockname(), timeout=5); print('served')
except OSError as e:
    print('refused', e.errno)
\"";

#[test]
fn binding_a_tcp_port_is_refused_unless_local_binding_is_allowed() {
    if !layers() || Probe::get().landlock_abi < Some(4) {
        return;
    }
    let fx = fixture("bind");
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = proxy.local_addr().unwrap().port();
    let proxied = fx.policy.clone().with_network(Network::Proxy { port });
    // Refused by Landlock's bind rule (EACCES), with the proxy and with the network off (where
    // seccomp refuses the socket itself, EPERM).
    assert_eq!(run(&proxied, &fx.root, LISTEN_AND_CONNECT), (0, "refused 13\n".to_owned()));
    assert_eq!(run(&fx.policy, &fx.root, LISTEN_AND_CONNECT), (0, "refused 1\n".to_owned()));
    // Allowed: the port is bound. Without a network namespace, connecting stays limited to the
    // proxy's port, so the command's own server is out of its reach.
    let bare = Probe { network_namespace: false, ..Probe::get() };
    for policy in [proxied.clone(), fx.policy.clone()] {
        let sandbox = Sandbox::with_probe(policy.with_local_binding(true), bare).unwrap();
        assert_eq!(run_in(&sandbox, &fx.root, LISTEN_AND_CONNECT), (0, "listening\nrefused 13\n".to_owned()));
    }
    if !network_namespace() {
        return;
    }
    // In a namespace of their own, nothing but the proxy and their own servers is there, so
    // commands may connect to any port in it; what is outside stays out of reach.
    let (namespace, listener) = NetworkNamespace::with_listener().unwrap();
    let port = listener.local_addr().unwrap().port();
    // (Unless the port is taken here: then only the refusal is checked.)
    let outside = std::net::TcpListener::bind(("127.0.0.2", port)).ok();
    let policy = fx.policy.clone().with_network(Network::Proxy { port }).with_local_binding(true);
    let sandbox = Sandbox::new(policy).unwrap().in_network_namespace(namespace);
    let (code, out) = run_in(&sandbox, &fx.root, LISTEN_AND_CONNECT);
    assert_eq!((code, out.as_str()), (0, "listening\nserved\n"), "{}", sandbox.report());
    let (_, out) = run_in(
        &sandbox,
        &fx.root,
        &connect_script(&[("proxy", "127.0.0.1", port), ("loopback2", "127.0.0.2", port)]),
    );
    assert_eq!(out, "proxy connected\nloopback2 refused 111\n");
    assert_eq!(outside.as_ref().map_or(0, accepted), 0);
    // With the network off: the sandbox's namespace has its loopback up; nothing else.
    let sandbox = Sandbox::new(fx.policy.clone().with_local_binding(true)).unwrap();
    assert!(sandbox.report().layers.contains(&"network-namespace"), "{}", sandbox.report());
    assert_eq!(run_in(&sandbox, &fx.root, LISTEN_AND_CONNECT), (0, "listening\nserved\n".to_owned()));
    let (_, out) = run_in(&sandbox, &fx.root, &connect_script(&[("loopback2", "127.0.0.2", port)]));
    assert_eq!(out, "loopback2 refused 111\n");
    let (_, out) = run_in(
        &sandbox,
        &fx.root,
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\" 2>&1 | tail -1",
    );
    assert!(out.contains("Operation not permitted"), "UDP stays refused: {out}");
}

#[test]
fn abstract_unix_sockets_outside_the_sandbox_are_scoped_unless_all_are_allowed() {
    if !layers() || Probe::get().landlock_abi < Some(6) {
        return;
    }
    let fx = fixture("unix");
    let name = format!("tool-sandbox-scope-{}", std::process::id());
    let _listener = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap(),
    )
    .unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect(b'\\0{name}'); print('connected')\" 2>&1 | tail -1"
    );
    // Landlock's scope alone (no network namespace): refused with EPERM.
    let bare = Probe { network_namespace: false, ..Probe::get() };
    let scoped = Sandbox::with_probe(fx.policy.clone(), bare).unwrap();
    let (_, out) = run_in(&scoped, &fx.root, &connect);
    assert!(out.contains("PermissionError") || out.contains("Operation not permitted"), "{out}");
    // Every Unix socket allowed: no scope, and no network namespace either.
    let all = Sandbox::new(fx.policy.clone().with_all_unix_sockets(true)).unwrap();
    assert!(!all.report().layers.contains(&"network-namespace"), "{}", all.report());
    assert_eq!(run_in(&all, &fx.root, &connect), (0, "connected\n".to_owned()));
    // A socket named by path is reached either way on this kernel (Landlock ABI 9 would judge it).
    let path = fx.root.join("named.sock");
    let _named = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let connect_path = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        path.display()
    );
    if Probe::get().landlock_abi < Some(9) {
        assert_eq!(run_in(&scoped, &fx.root, &connect_path), (0, "connected\n".to_owned()));
    }
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

#[path = "kernel/privileges.rs"]
mod privileges;

#[path = "kernel/state.rs"]
mod state;

#[path = "kernel/sockets.rs"]
mod sockets;

#[path = "kernel/terminals.rs"]
mod terminals;

#[path = "kernel/unreadable.rs"]
mod unreadable;

#[path = "kernel/shut_in.rs"]
mod shut_in;
