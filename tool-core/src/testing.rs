//! Test support for the crate's unit tests: temporary directories.
//!
//! `tool-tests` has the workspace's shared helpers, but it depends on this crate, so this crate's
//! own tests cannot use it; this is the one copy here.

use std::path::Path;

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(tempfile::TempDir);

impl TempDir {
    /// A new empty directory whose name contains `tag`.
    pub(crate) fn new(tag: &str) -> Self {
        let prefix = format!("tool-runtime-test-{tag}-");
        TempDir(tempfile::Builder::new().prefix(&prefix).tempdir().expect("create temp dir"))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }
}
