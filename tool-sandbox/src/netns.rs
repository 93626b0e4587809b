//! A network namespace of their own for sandboxed commands: only a loopback interface, so the
//! one thing they can connect to is what listens inside it (the egress proxy).

use std::fmt;
use std::io;
#[cfg(target_os = "linux")]
use std::sync::Arc;

/// A new network namespace: a loopback interface and nothing else, no route out. A
/// [`Sandbox`](crate::Sandbox) joined to it ([`Sandbox::in_network_namespace`](crate::Sandbox::in_network_namespace))
/// starts its commands inside it.
///
/// Landlock's TCP rules know ports, not addresses: a command allowed to connect to the proxy's
/// port could connect to that port on any address (`127.0.0.2`, `::1`, another machine). In a
/// namespace of its own, the only socket listening is the one made inside it by
/// [`NetworkNamespace::with_listener`], whose accepted connections this process serves from
/// outside (a listening socket stays in the namespace it was created in).
///
/// Making one needs `CAP_SYS_ADMIN` (root, most containers run as root) or unprivileged user
/// namespaces; then the namespace is made in a short-lived helper process inside a user
/// namespace of its own, which commands join too. [`Probe::network_namespace`](crate::Probe)
/// says whether this process can. The namespace lives while this value, its listener, or a
/// process inside it does.
///
/// ```no_run
/// use tool_sandbox::{Network, NetworkNamespace, Sandbox, SandboxPolicy};
///
/// let (namespace, listener) = NetworkNamespace::with_listener()?;
/// let port = listener.local_addr()?.port();
/// // Serve `listener` (an egress proxy), and start commands in the namespace, TCP to `port` only.
/// let policy = SandboxPolicy::workspace_write(std::env::current_dir()?).with_network(Network::Proxy { port });
/// let sandbox = Sandbox::new(policy)?.in_network_namespace(namespace);
/// assert!(sandbox.report().layers.contains(&"network-namespace"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NetworkNamespace {
    #[cfg(target_os = "linux")]
    pub(crate) fds: Arc<crate::child::NamespaceFds>,
    /// Whether it was made in a user namespace of its own.
    in_user_namespace: bool,
}

impl fmt::Debug for NetworkNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkNamespace").field("in_user_namespace", &self.in_user_namespace).finish()
    }
}

impl NetworkNamespace {
    /// The port of the listener of [`NetworkNamespace::with_listener`]: the same in every
    /// namespace (each has a loopback of its own, where nothing else listens yet), so that a
    /// sandbox confining TCP to it is built once for every command's namespace.
    pub const PROXY_PORT: u16 = 30128;

    /// A new namespace with its loopback interface up and a TCP socket listening on
    /// `127.0.0.1:`[`PROXY_PORT`](Self::PROXY_PORT) inside it.
    pub fn with_listener() -> io::Result<(NetworkNamespace, std::net::TcpListener)> {
        let (namespace, listener) = Self::make(true, true)?;
        let listener = listener.ok_or_else(|| io::Error::other("no listener was made in the namespace"))?;
        Ok((namespace, listener))
    }

    /// A new namespace with nothing in it, not even a loopback interface that is up: no
    /// Internet socket can connect anywhere, and abstract Unix sockets (which live in a network
    /// namespace) are those of its processes only.
    pub fn empty() -> io::Result<NetworkNamespace> {
        Self::make(false, false).map(|(namespace, _)| namespace)
    }

    /// A new namespace with its loopback interface up and nothing listening: its processes
    /// reach each other's servers on `127.0.0.1`, and nothing outside.
    pub fn loopback() -> io::Result<NetworkNamespace> {
        Self::make(true, false).map(|(namespace, _)| namespace)
    }

    /// Whether it was made inside a user namespace of its own (this process lacks
    /// `CAP_SYS_ADMIN`); its commands join that user namespace too.
    pub fn in_user_namespace(&self) -> bool {
        self.in_user_namespace
    }

    #[cfg(target_os = "linux")]
    fn make(up: bool, listen: bool) -> io::Result<(NetworkNamespace, Option<std::net::TcpListener>)> {
        match crate::child::namespace_by_thread(up, listen) {
            Ok(made) => {
                Ok((NetworkNamespace { fds: Arc::new(made.fds), in_user_namespace: false }, made.listener))
            }
            // Without CAP_SYS_ADMIN, through a user namespace.
            Err(direct) if direct.kind() == io::ErrorKind::PermissionDenied => {
                Self::make_in_user_namespace(up, listen).map_err(|e| {
                    io::Error::new(e.kind(), format!("{direct}; in a user namespace of its own: {e}"))
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Makes the namespace inside a user namespace of its own, whatever this process's rights.
    #[cfg(target_os = "linux")]
    pub(crate) fn make_in_user_namespace(
        up: bool,
        listen: bool,
    ) -> io::Result<(NetworkNamespace, Option<std::net::TcpListener>)> {
        let made = crate::child::namespace_by_helper(up, listen)?;
        Ok((NetworkNamespace { fds: Arc::new(made.fds), in_user_namespace: true }, made.listener))
    }

    #[cfg(not(target_os = "linux"))]
    fn make(_up: bool, _listen: bool) -> io::Result<(NetworkNamespace, Option<std::net::TcpListener>)> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "network namespaces exist on Linux only"))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::{Network, Probe, Sandbox, SandboxPolicy};

    /// The way a process without `CAP_SYS_ADMIN` makes the namespace, taken here whatever this
    /// process's rights: commands join its user namespace too, and their protected paths are
    /// still mounted read-only.
    #[test]
    fn a_namespace_made_in_a_user_namespace_holds_the_proxy_alone() {
        let probe = Probe::get();
        if !probe.user_namespaces || probe.landlock_abi < Some(4) || !probe.seccomp {
            eprintln!("skipped: no user namespaces, Landlock ABI 4 or seccomp here ({probe})");
            return;
        }
        let (namespace, listener) = NetworkNamespace::make_in_user_namespace(true, true).unwrap();
        assert!(namespace.in_user_namespace());
        let listener = listener.unwrap();
        let port = listener.local_addr().unwrap().port();
        let other = std::net::TcpListener::bind(("127.0.0.2", port)).unwrap();
        let root = std::env::temp_dir().join(format!("tool-sandbox-userns-{}", std::process::id()));
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let root = root.canonicalize().unwrap();
        let policy = SandboxPolicy::workspace_write(&root).with_network(Network::Proxy { port });
        let sandbox = Sandbox::new(policy).unwrap().in_network_namespace(namespace);
        let mut command = std::process::Command::new("bash");
        command.current_dir(&root).arg("-c").arg(format!(
            "exec 2>/dev/null; (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo proxy; \
             (exec 3<>/dev/tcp/127.0.0.2/{port}) || echo other refused; \
             echo x > .git/hooks/new || echo hooks refused; echo x > written && echo wrote"
        ));
        sandbox.apply(&mut command, &root).unwrap();
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, "proxy\nother refused\nhooks refused\nwrote\n");
        listener.set_nonblocking(true).unwrap();
        other.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_ok() && other.accept().is_err());
        assert!(!root.join(".git/hooks/new").exists() && root.join("written").exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_failed_step_is_named() {
        let error = crate::child::step_error(2, libc::EPERM);
        assert_eq!(
            error.to_string(),
            "bringing the loopback interface up: Operation not permitted (os error 1)"
        );
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
    }
}
