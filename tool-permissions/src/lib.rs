//! Declarative permissions: rules (`allow` / `ask` / `deny` per tool, with command and path
//! patterns), settings files in Claude Code's shape, hook commands, and shell command
//! classification. A [`Policy`] puts them together and is installed on a dispatcher with
//! [`PolicyExt::policy`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod catalog;
#[cfg(feature = "command-hooks")]
mod command_hooks;
mod command_paths;
mod input;
mod mode;
pub mod patch;
mod policy;
mod rules;
mod settings;
pub mod shell;

pub use catalog::{Access, Subject, ToolCatalog};
pub use mode::{ModeSwitch, PermissionMode};
pub use policy::{Policy, PolicyExt, unanswered};
pub use rules::{Action, EXTERNAL_DIRECTORY, RuleError, Rules, RulesBuilder};
pub use settings::{DEFAULT_HOOK_TIMEOUT, SandboxSettings, Settings, SettingsError, environment};
pub use tool_settings::{NotApplied, SettingsFile};
