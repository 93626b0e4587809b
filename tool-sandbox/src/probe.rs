//! Which confinement layers the running kernel offers.

use std::fmt;
use std::sync::OnceLock;

/// The layers the kernel offers to this process, found once per process by asking the kernel
/// (and, for namespaces, by starting a short-lived child that tries to create one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Probe {
    /// The highest Landlock ABI the kernel offers; `None` when Landlock is not built in or not
    /// enabled at boot.
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether a child can get a mount namespace of its own without a user namespace (it has
    /// `CAP_SYS_ADMIN`, as root does).
    pub mount_namespace: bool,
    /// Whether a child can create a user namespace (and a mount namespace in it).
    pub user_namespaces: bool,
    /// Whether a [`NetworkNamespace`](crate::NetworkNamespace) can be made (with
    /// `CAP_SYS_ADMIN`, or in a user namespace): one was made, with a listener, and dropped.
    pub network_namespace: bool,
}

impl Probe {
    /// The probe of this process, made on first use.
    pub fn get() -> Probe {
        static PROBE: OnceLock<Probe> = OnceLock::new();
        *PROBE.get_or_init(Probe::run)
    }

    #[cfg(target_os = "linux")]
    fn run() -> Probe {
        let (mount_namespace, user_namespaces) = crate::child::namespaces_available();
        Probe {
            landlock_abi: crate::child::landlock_abi(),
            seccomp: crate::child::seccomp_available(),
            mount_namespace,
            user_namespaces,
            network_namespace: crate::NetworkNamespace::with_listener().is_ok(),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn run() -> Probe {
        Probe {
            landlock_abi: None,
            seccomp: false,
            mount_namespace: false,
            user_namespaces: false,
            network_namespace: false,
        }
    }

    /// Whether read-only mounts can protect paths inside the writable roots.
    pub fn can_protect_paths(&self) -> bool {
        self.mount_namespace || self.user_namespaces
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.landlock_abi {
            Some(abi) => write!(f, "Landlock ABI {abi}")?,
            None => f.write_str("no Landlock")?,
        }
        f.write_str(if self.seccomp { ", seccomp" } else { ", no seccomp" })?;
        f.write_str(match (self.mount_namespace, self.user_namespaces) {
            (true, true) => ", mount and user namespaces",
            (true, false) => ", mount namespaces (no user namespaces)",
            (false, true) => ", user namespaces",
            (false, false) => ", no namespaces",
        })?;
        f.write_str(if self.network_namespace { ", network namespaces" } else { ", no network namespaces" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_every_layer() {
        let probe = Probe {
            landlock_abi: Some(7),
            seccomp: true,
            mount_namespace: true,
            user_namespaces: false,
            network_namespace: true,
        };
        assert_eq!(
            probe.to_string(),
            "Landlock ABI 7, seccomp, mount namespaces (no user namespaces), network namespaces"
        );
        let none = Probe {
            landlock_abi: None,
            seccomp: false,
            mount_namespace: false,
            user_namespaces: false,
            network_namespace: false,
        };
        assert_eq!(none.to_string(), "no Landlock, no seccomp, no namespaces, no network namespaces");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_running_kernel_is_probed() {
        let probe = Probe::get();
        // Under CI the machine is known to have both; elsewhere, say what was found.
        if std::env::var_os("CI").is_some() {
            assert!(probe.landlock_abi.is_some() && probe.seccomp, "{probe}");
        }
        eprintln!("probe: {probe}");
    }
}
