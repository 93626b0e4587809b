//! Kernel confinement for the commands that coding tools start.
//!
//! A [`SandboxPolicy`] says what a command may do; [`Sandbox::new`] checks it against what the
//! running kernel offers ([`Probe`]) and refuses, saying what is missing, when it cannot be
//! enforced (unless the policy's [`Fallback`] allows less); [`Sandbox::apply`] makes a
//! `std::process::Command` (or `tokio::process::Command::as_std_mut`) enter it between `fork`
//! and `exec`. On Linux the layers are:
//!
//! - **Landlock** (any ABI, the highest the kernel has): reading where the policy allows it
//!   (everywhere by default), writing only beneath the writable roots; TCP connections and
//!   binds refused (ABI 4), or allowed only to the proxy's port; signals and abstract Unix
//!   sockets scoped to the command (ABI 6). Unprivileged, it works in containers.
//! - **seccomp** (with `no_new_privs`): `ptrace`, mounts, namespaces, BPF, keyrings, perf, module
//!   and kexec loading, io_uring, opening by handle and the like are refused with `EPERM`; with
//!   the network off, every socket family but Unix sockets.
//! - **Read-only mounts** for the protected paths inside writable roots (`.git/hooks`,
//!   `.git/config`, shell start-up files, agent settings), in a mount namespace of the command's
//!   own; where this process cannot create one, the report says they are not enforced.
//!
//! The crate knows nothing of tools: [`violation::detect`] explains a refusal from a command's
//! output, for a caller that wants to tell the model.
//!
//! Beside confinement, the rest of what a started process gets and how it ends:
//! [`environment`] filters the variables it inherits (API keys stay out), [`process_tree`]
//! finds its whole tree (descendants, process group, marker, cgroup) and kills it.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

#[cfg(target_os = "linux")]
mod child;
pub mod environment;
#[cfg(target_os = "linux")]
mod landlock_rules;
mod policy;
mod probe;
pub mod process_tree;
mod sandbox;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod violation;

pub use policy::{DEFAULT_PROTECTED, Fallback, Network, SandboxMode, SandboxPolicy};
pub use probe::Probe;
pub use sandbox::{Sandbox, SandboxError, SandboxReport};
pub use violation::Violation;
