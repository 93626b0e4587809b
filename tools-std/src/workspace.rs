//! `Workspace`: the root every path argument is resolved against, and the operations used to reach it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use tool_runtime::{PermissionKind, PermissionRequest, ToolContext, ToolError};

use crate::ops::{FileKind, LocalOperations, Operations};
use crate::text::display_path;

/// How many symbolic links one path may pass through, as Linux allows.
const MAX_SYMLINK_HOPS: usize = 40;

/// The directory the file tools work in, and the [`Operations`] that reach it.
///
/// Register it as a dependency (`deps.insert(Workspace::new(root)?)`, or use
/// [`crate::dependencies`]). Every path argument is resolved against [`Workspace::root`] with
/// symbolic links followed; a path that ends up outside the root needs the context's permission
/// (an external-directory request), which the default policy denies.
#[derive(Clone)]
pub struct Workspace {
    root: PathBuf,
    ops: Arc<dyn Operations>,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace").field("root", &self.root).finish_non_exhaustive()
    }
}

/// A path argument after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The absolute path with every symbolic link resolved (missing trailing components are kept
    /// as given).
    pub path: PathBuf,
    /// How to name it to the model: relative to the root when inside it, absolute otherwise.
    pub display: String,
    /// Whether it lies inside the workspace root.
    pub inside: bool,
}

impl Workspace {
    /// A workspace on the local file system. `root` is made absolute and canonical; it must be
    /// an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("the workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Workspace { root, ops: Arc::new(LocalOperations) })
    }

    /// A workspace reached through `ops` (a remote sandbox, for example). `root` must be an
    /// absolute path to a directory there; its symbolic links are resolved through `ops`.
    pub fn with_operations(root: impl AsRef<Path>, ops: Arc<dyn Operations>) -> io::Result<Workspace> {
        let root = root.as_ref();
        if !root.is_absolute() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the workspace root {} must be an absolute path", root.display()),
            ));
        }
        let root = resolve_links(ops.as_ref(), Path::new("/"), root)?;
        if ops.metadata(&root)?.kind != FileKind::Dir {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("the workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Workspace { root, ops })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The operations the tools use.
    pub fn operations(&self) -> &Arc<dyn Operations> {
        &self.ops
    }

    /// Resolves a path argument from the model: relative paths start at the root, symbolic
    /// links are followed (any number of hops), and a result outside the root is only returned
    /// when the context's permission hook allows an external-directory request. `action` says
    /// what the tool means to do, for the person asked ("read", "write to", ...).
    pub async fn resolve(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
    ) -> Result<ResolvedPath, ToolError> {
        let resolved = self.resolve_unchecked(path).await?;
        if !resolved.inside {
            let request = PermissionRequest::new(
                PermissionKind::ExternalDirectory { path: resolved.path.clone() },
                format!("{action} {}, outside the workspace root {}", resolved.display, self.root.display()),
            );
            ctx.ask(request).await?;
        }
        Ok(resolved)
    }

    /// Resolves a path argument like [`Workspace::resolve`], without asking for permission.
    pub async fn resolve_unchecked(&self, path: &str) -> Result<ResolvedPath, ToolError> {
        if path.contains('\0') {
            return Err(ToolError::invalid_arguments(format!(
                "The path {path:?} contains a NUL character, which no file name can contain."
            )));
        }
        let raw = PathBuf::from(path);
        let root = self.root.clone();
        let resolved = self
            .blocking(move |ops| resolve_links(ops, &root, &raw))
            .await?
            .map_err(|e| path_error(path, e))?;
        let inside = resolved.starts_with(&self.root);
        Ok(ResolvedPath { display: self.display(&resolved), path: resolved, inside })
    }

    /// How the model sees `path`: relative to the root when inside it (`.` for the root itself),
    /// absolute otherwise; names that are not plain text are quoted with escapes.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => display_path(rel),
            Err(_) => display_path(path),
        }
    }

    /// Runs blocking file-system work on a blocking thread.
    pub(crate) async fn blocking<T, F>(&self, work: F) -> Result<T, ToolError>
    where
        F: FnOnce(&dyn Operations) -> T + Send + 'static,
        T: Send + 'static,
    {
        let ops = self.ops.clone();
        tokio::task::spawn_blocking(move || work(ops.as_ref())).await.map_err(|e| {
            ToolError::execution("the file-system work of this call failed unexpectedly").with_source(e)
        })
    }
}

fn path_error(path: &str, error: io::Error) -> ToolError {
    let message = if error.kind() == io::ErrorKind::InvalidInput {
        error.to_string()
    } else {
        format!("Cannot resolve the path {path:?}: {error}")
    };
    ToolError::from_io(error).with_message(message)
}

enum Part {
    Parent,
    Name(OsString),
}

fn parts(path: &Path) -> (bool, Vec<Part>) {
    let mut absolute = false;
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => parts.push(Part::Parent),
            Component::Normal(name) => parts.push(Part::Name(name.to_owned())),
        }
    }
    (absolute, parts)
}

/// Joins `path` to `base` (an absolute, already resolved directory) and follows every symbolic
/// link on the way, through `ops`. Components after the first missing one are joined as given.
pub(crate) fn resolve_links(ops: &dyn Operations, base: &Path, path: &Path) -> io::Result<PathBuf> {
    let (absolute, first) = parts(path);
    let mut current = if absolute { PathBuf::from("/") } else { base.to_path_buf() };
    let mut queue: VecDeque<Part> = first.into();
    let mut exists = true;
    let mut hops = 0;
    while let Some(part) = queue.pop_front() {
        match part {
            Part::Parent => {
                // `current` has no links left in it, so its parent is the real parent.
                current.pop();
            }
            Part::Name(name) => {
                let candidate = current.join(&name);
                if !exists {
                    current = candidate;
                    continue;
                }
                match ops.symlink_metadata(&candidate) {
                    Ok(info) if info.kind == FileKind::Symlink => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!(
                                    "The path {} passes through more than {MAX_SYMLINK_HOPS} symbolic links (a loop?).",
                                    path.display()
                                ),
                            ));
                        }
                        let target = ops.read_link(&candidate)?;
                        let (target_absolute, target_parts) = parts(&target);
                        if target_absolute {
                            current = PathBuf::from("/");
                        }
                        for part in target_parts.into_iter().rev() {
                            queue.push_front(part);
                        }
                    }
                    Ok(_) => current = candidate,
                    Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                        exists = false;
                        current = candidate;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    #[cfg(unix)]
    #[test]
    fn links_are_followed_through_every_hop() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("ws/sub")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        symlink("../outside", root.join("ws/hop2")).unwrap();
        symlink("hop2", root.join("ws/sub/../hop1")).unwrap();
        let ws = root.join("ws");
        let resolved = resolve_links(&LocalOperations, &ws, Path::new("hop1/file.txt")).unwrap();
        assert_eq!(resolved, root.join("outside/file.txt"));
        let resolved = resolve_links(&LocalOperations, &ws, Path::new("sub/../missing/../x")).unwrap();
        assert_eq!(resolved, ws.join("x"));
        let resolved = resolve_links(&LocalOperations, &ws, Path::new("../ws/./sub")).unwrap();
        assert_eq!(resolved, ws.join("sub"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_loop_is_an_error_not_a_hang() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        let err = resolve_links(&LocalOperations, dir.path(), Path::new("a/x")).unwrap_err();
        assert!(err.to_string().contains("more than 40 symbolic links"), "{err}");
    }
}
