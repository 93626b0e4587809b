//! The file system the tools reach: the [`Workspace`](workspace::Workspace) and its root, the
//! [`Operations`](ops::Operations) on it, their local implementation, the walk over a tree, and
//! the permission screen over the paths a walk finds.

#[cfg(unix)]
pub(crate) mod host;
pub(crate) mod local;
pub mod ops;
pub(crate) mod roots;
pub(crate) mod screen;
pub(crate) mod stop;
pub(crate) mod walk;
pub mod workspace;
