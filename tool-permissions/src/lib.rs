//! Declarative permissions: rules (`allow` / `ask` / `deny` per tool, with command and path
//! patterns), settings files in Claude Code's shape, hook commands, and shell command
//! classification. A [`Policy`] puts them together and is installed on a dispatcher with
//! [`PolicyExt::policy`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod catalog;
#[cfg(feature = "command-hooks")]
mod command_hooks;
mod command_paths;
mod input;
mod policy;
mod rules;
mod settings;
pub mod shell;

pub use catalog::{Subject, ToolCatalog};
pub use policy::{Policy, PolicyExt, unanswered};
pub use rules::{Action, EXTERNAL_DIRECTORY, RuleError, Rules, RulesBuilder};
pub use settings::{DEFAULT_HOOK_TIMEOUT, SandboxSettings, Settings, SettingsError};
