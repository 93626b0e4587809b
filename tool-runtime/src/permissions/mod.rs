//! Declarative permissions: rules (`allow` / `ask` / `deny` per tool, with command and path
//! patterns), settings files in Claude Code's shape, hook commands, and shell command
//! classification. A [`Policy`] puts them together and is installed on a dispatcher with
//! [`DispatcherBuilder::policy`](crate::DispatcherBuilder::policy).

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
pub use policy::Policy;
pub(crate) use policy::call_asker;
#[cfg(feature = "mcp")]
pub(crate) use policy::unanswered;
pub(crate) use policy::with_call_asker;
pub(crate) use policy::{After, Gate};
pub use rules::{Action, EXTERNAL_DIRECTORY, RuleError, Rules, RulesBuilder};
pub use settings::{DEFAULT_HOOK_TIMEOUT, SandboxSettings, Settings, SettingsError};
