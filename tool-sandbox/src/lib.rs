#![doc = include_str!("../docs/sandbox.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

#[cfg(target_os = "linux")]
mod child;
pub mod environment;
#[cfg(unix)]
mod git_config;
#[cfg(target_os = "linux")]
mod landlock_rules;
#[cfg(target_os = "linux")]
mod leftover;
mod lexical;
mod nested;
mod netns;
#[cfg(target_os = "linux")]
mod placeholder_lock;
mod policy;
mod probe;
pub mod process_tree;
mod programs;
mod sandbox;
#[cfg(target_os = "linux")]
mod seccomp;
mod session_dir;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod unreadable;
pub mod violation;

#[cfg(target_os = "linux")]
pub use landlock_rules::shut_in;
pub use lexical::lexically_normal;
pub use netns::NetworkNamespace;
pub use policy::{
    DEFAULT_PROTECTED, Fallback, GIT_PROTECTED, HOME_FILE_PLACEHOLDERS, HOME_PLACEHOLDERS, HOME_PROTECTED,
    Limits, Network, PLACEHOLDERS, ParseSandboxModeError, SandboxMode, SandboxPolicy, service_socket_dirs,
};
pub use probe::Probe;
pub use programs::resolve_program;
pub use sandbox::{Placeholders, Sandbox, SandboxError, SandboxReport, is_held, is_held_placeholder};
pub use session_dir::SessionDir;
pub use violation::Violation;
