#![doc = include_str!("../docs/code.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod companions;
mod describe;
mod engine;
mod held;
mod limits;
mod prelude;
mod tool;
mod worker;

pub use limits::Limits;
pub use tool::{CodeTool, NAME};
pub use worker::{WorkerCommand, serve_worker};
