//! Unix sockets by path: below Landlock ABI 9 the report says they are not confined, and the
//! directories where the user's services listen (tmux's, here) are hidden from commands.

use std::os::unix::fs::PermissionsExt;

use tool_sandbox::{Probe, Sandbox};

use super::{fixture, layers, run_in};

/// A tmux server's socket directory (`/tmp/tmux-UID`) is hidden from a command: a server
/// listening there cannot be reached, and `allowUnixSockets` naming its socket keeps it in
/// reach. Below ABI 9 every report says Unix sockets by path are not enforced.
#[test]
fn a_tmux_servers_socket_is_out_of_a_commands_reach() {
    if !layers() {
        return;
    }
    let probe = Probe::get();
    if !probe.can_protect_paths() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root and can make mount namespaces"
        );
        return eprintln!("skipped: no mount namespaces here");
    }
    let fx = fixture("sockets");
    let uid = nix::unistd::geteuid().as_raw();
    let dir = std::path::PathBuf::from(format!("/tmp/tmux-{uid}"));
    let made = !dir.exists();
    if made {
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let socket = dir.join(format!("tool-sandbox-test-{}", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\" \
         2>/dev/null || echo refused",
        socket.display()
    );
    let python =
        std::process::Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success());

    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let report = sandbox.report().to_string();
    if probe.landlock_abi < Some(9) {
        assert!(report.contains("NOT ENFORCED: Unix sockets by path"), "{report}");
        assert!(report.contains(&dir.display().to_string()), "the hidden directory is named: {report}");
    }
    assert!(sandbox.policy().hidden_socket_dirs().contains(&dir), "{report}");
    let (_, listed) = run_in(&sandbox, &fx.root, &format!("ls -A {} 2>/dev/null | wc -l", dir.display()));
    assert_eq!(listed.trim(), "0", "nothing in the directory is seen by the command");
    if python {
        let (_, out) = run_in(&sandbox, &fx.root, &connect);
        assert_eq!(out.trim(), "refused", "{out}");
        // Named by allowUnixSockets: reachable at its own path, alone in the directory, which
        // stays hidden (another server's socket beside it is not reachable).
        let other = dir.join(format!("tool-sandbox-other-{}", std::process::id()));
        let _ = std::fs::remove_file(&other);
        let other_listener = std::os::unix::net::UnixListener::bind(&other).unwrap();
        let allowed = Sandbox::new(fx.policy.clone().with_unix_socket(&socket)).unwrap();
        assert!(allowed.policy().hidden_socket_dirs().contains(&dir));
        assert_eq!(allowed.policy().revealed_sockets(), std::slice::from_ref(&socket));
        let (_, out) = run_in(&allowed, &fx.root, &connect);
        assert_eq!(out.trim(), "connected", "{out}");
        let (_, out) = run_in(
            &allowed,
            &fx.root,
            &connect.replace(&socket.display().to_string(), &other.display().to_string()),
        );
        assert_eq!(out.trim(), "refused", "{out}");
        let (_, listed) = run_in(&allowed, &fx.root, &format!("ls -A {} 2>&1", dir.display()));
        assert!(!listed.contains("tool-sandbox-other"), "{listed}");
        let (_, written) = run_in(
            &allowed,
            &fx.root,
            &format!("touch {}/planted 2>/dev/null && echo written", dir.display()),
        );
        assert_eq!(written.trim(), "", "the directory the command sees is read-only");
        drop(other_listener);
        let _ = std::fs::remove_file(&other);
    } else {
        eprintln!("skipped the connection checks: python3 is not installed");
    }
    drop(listener);
    let _ = std::fs::remove_file(&socket);
    if made {
        let _ = std::fs::remove_dir(&dir);
    }
}
