//! Shell commands: processes and their trees, the capture of their output as text, the network
//! of a sandboxed command, and the background sessions that outlive a `bash` call.

pub(crate) mod capture;
#[cfg(feature = "egress")]
pub(crate) mod network;
#[cfg(not(feature = "egress"))]
#[path = "no_egress.rs"]
pub(crate) mod network;
pub(crate) mod notes;
pub mod process;
pub(crate) mod reader;
pub mod session;
pub(crate) mod terminal_text;
