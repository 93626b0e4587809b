//! `LocalOperations`: the local file system, every workspace path resolved by the kernel beneath the root's directory handle.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use tool_runtime::environment::EnvFilter;

use crate::fs::ops::{
    DirEntry, FileChanged, FileInfo, FileKind, Operations, Precondition, ShellProcess, ShellRequest, Target,
    WalkEntry, WalkOptions, Written, content_hash,
};
use crate::fs::roots::{Roots, escape, info, kind_of, not_special, open_regular};

/// The local file system and local processes.
///
/// The workspace root is opened once as a directory handle; every [`Scope::Workspace`] path is
/// resolved relative to it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (through
/// `cap-std`, which falls back to a careful component-by-component resolution where `openat2`
/// is missing). A symbolic link or a `..` that would leave the root, even one that appears
/// while a tool works, makes the operation fail; nothing outside is opened. Paths outside the
/// root ([`Scope::Outside`], only made after the permission hook granted them) are resolved
/// from `/`.
///
/// [`Scope::Workspace`]: crate::fs::ops::Scope::Workspace
/// [`Scope::Outside`]: crate::fs::ops::Scope::Outside
#[derive(Clone)]
pub struct LocalOperations {
    roots: Roots,
    environment: Arc<EnvFilter>,
}

impl std::fmt::Debug for LocalOperations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOperations").field("root", &self.roots.root_path()).finish_non_exhaustive()
    }
}

impl LocalOperations {
    /// Opens the directory `root` as the workspace root.
    pub fn open(root: impl AsRef<Path>) -> io::Result<LocalOperations> {
        Ok(LocalOperations { roots: Roots::open(root.as_ref())?, environment: Arc::new(EnvFilter::base()) })
    }

    /// Sets which of this process's environment variables commands inherit (default:
    /// [`EnvFilter::base`], so that API keys in the agent's environment do not reach them).
    #[must_use]
    pub fn environment(mut self, filter: EnvFilter) -> Self {
        self.environment = Arc::new(filter);
        self
    }
}

impl Operations for LocalOperations {
    fn metadata(&self, path: &Target) -> io::Result<FileInfo> {
        let (dir, path) = self.roots.anchor(path)?;
        dir.metadata(path).map(|m| info(&m)).map_err(escape)
    }

    fn symlink_metadata(&self, path: &Target) -> io::Result<FileInfo> {
        let (dir, path) = self.roots.anchor(path)?;
        dir.symlink_metadata(path).map(|m| info(&m)).map_err(escape)
    }

    fn read_link(&self, path: &Target) -> io::Result<PathBuf> {
        let (dir, path) = self.roots.anchor(path)?;
        // `read_link_contents` returns the link as stored, absolute targets included; whether
        // following it stays inside is the caller's (and the kernel's) business.
        dir.read_link_contents(path).map_err(escape)
    }

    fn open(&self, path: &Target) -> io::Result<Box<dyn Read + Send>> {
        let (dir, path) = self.roots.anchor(path)?;
        Ok(Box::new(open_regular(dir, path)?))
    }

    fn read_dir(&self, path: &Target) -> io::Result<Vec<DirEntry>> {
        let dir = self.roots.open_dir(path)?;
        let mut entries = Vec::new();
        for entry in dir.entries()? {
            let entry = entry?;
            let kind = entry.file_type().map_or(FileKind::Other, kind_of);
            entries.push(DirEntry { name: entry.file_name(), kind });
        }
        Ok(entries)
    }

    fn create_dir_all(&self, path: &Target) -> io::Result<()> {
        let (dir, path) = self.roots.anchor(path)?;
        dir.create_dir_all(path).map_err(escape)
    }

    fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names a directory, not a file")
        })?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_dir(&parent)?;
        write_atomic_in(&dir, Path::new(name), contents, check)
    }

    fn remove_file(&self, path: &Target) -> io::Result<()> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names a directory, not a file")
        })?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_dir(&parent)?;
        // The same lock as `write_atomic`, so a removal never interleaves with a replacement.
        let lock = dir.open_with(".", OpenOptions::new().read(true))?.into_std();
        lock.lock()?;
        dir.remove_file(Path::new(name)).map_err(escape)?;
        let _ = lock.sync_all();
        Ok(())
    }

    fn remove_dir(&self, path: &Target) -> io::Result<()> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names the root, which is never removed")
        })?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_dir(&parent)?;
        dir.remove_dir(Path::new(name)).map_err(escape)
    }

    fn walk(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()> {
        crate::fs::walk::walk(&self.roots, root, options, visit)
    }

    fn walk_parallel(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &(dyn Fn(WalkEntry, &dyn crate::fs::ops::Found) -> bool + Sync),
    ) -> io::Result<()> {
        crate::fs::walk::walk_parallel(&self.roots, root, options, visit)
    }

    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
        let containment = crate::shell::process::Containment {
            environment: (*self.environment).clone(),
            ..crate::shell::process::Containment::default()
        };
        crate::shell::process::spawn_contained(request, containment)
    }
}

/// Writes `contents` to a fresh temporary file in `dir`, gives it the old file's permissions and
/// owner, and renames it over `name`, all relative to the directory handle (so a directory
/// swapped for a link meanwhile changes nothing). Writers take an exclusive lock on the directory
/// for the check and the rename.
fn write_atomic_in(dir: &Dir, name: &Path, contents: &[u8], check: Precondition) -> io::Result<Written> {
    // A handle that can be locked and synced (the directory handle itself may be `O_PATH`).
    let lock = dir.open_with(".", OpenOptions::new().read(true))?.into_std();
    lock.lock()?;
    let old = match dir.symlink_metadata(name) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(meta) = &old {
        // A link here was resolved by the caller; one that appeared since is replaced by the
        // file, never followed.
        if !meta.is_symlink() {
            not_special(meta)?;
        }
        if meta.is_file() && meta.mode() & 0o222 == 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "the file is read-only (mode {:o}); make it writable first (for example `chmod u+w`) if it should change",
                    meta.mode() & 0o7777
                ),
            ));
        }
    }
    if let Precondition::Unchanged(expected) = check {
        let current = match &old {
            Some(meta) if meta.is_file() => {
                let mut bytes = Vec::new();
                open_regular(dir, name)?.read_to_end(&mut bytes)?;
                Some(content_hash(&bytes))
            }
            _ => None,
        };
        if current != Some(expected) {
            return Err(FileChanged::error());
        }
    }
    let old_file = old.as_ref().filter(|m| m.is_file());
    let (temp_name, mut file) = create_temp_file(dir, name, old_file.is_some())?;
    let result = (|| {
        file.write_all(contents)?;
        file.flush()?;
        if let Some(meta) = old_file {
            #[cfg(unix)]
            {
                // Keep the owner where we may; an unprivileged process keeps its own.
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            }
            file.set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(
                meta.mode() & 0o7777,
            ))?;
        }
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        drop(file);
        dir.rename(&temp_name, dir, name)?;
        Ok(bytes)
    })();
    match result {
        Ok(bytes) => {
            // Make the rename itself durable; a file system that cannot sync a directory is fine.
            let _ = lock.sync_all();
            let other_links = old_file.map_or(0, |m| m.nlink().saturating_sub(1));
            Ok(Written { bytes, other_links })
        }
        Err(e) => {
            let _ = dir.remove_file(&temp_name);
            Err(e)
        }
    }
}

/// A new file next to `name`, readable by its owner only when it replaces an existing file (its
/// permissions are set to the old file's before the rename), with the default mode otherwise.
fn create_temp_file(dir: &Dir, name: &Path, replacing: bool) -> io::Result<(PathBuf, std::fs::File)> {
    let lossy = name.to_string_lossy();
    let stem: String = lossy.chars().take(64).collect();
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).follow(FollowSymlinks::No).mode(if replacing {
        0o600
    } else {
        0o666
    });
    let mut attempt = 0u32;
    loop {
        let temp =
            PathBuf::from(format!(".{stem}.{}.{:016x}.tmp", std::process::id(), crate::text::random_u64()));
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file.into_std())),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use cap_std::ambient_authority;

    use super::*;
    use crate::testing::TempDir;

    fn local(dir: &TempDir) -> LocalOperations {
        LocalOperations::open(dir.path()).unwrap()
    }

    /// What `env` prints in a command spawned through `ops`.
    async fn command_env(ops: &LocalOperations, dir: &TempDir) -> String {
        use tokio::io::AsyncReadExt;
        let request =
            ShellRequest { command: "env".into(), cwd: dir.path().to_path_buf(), ..ShellRequest::default() };
        let mut process = ops.spawn_shell(&request).unwrap();
        let mut seen = String::new();
        process.output.read_to_string(&mut seen).await.unwrap();
        seen
    }

    #[tokio::test]
    async fn commands_inherit_what_the_environment_filter_lets_through() {
        use tool_runtime::environment::EnvFilter;
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some(), "cargo sets it for its tests");
        let dir = TempDir::new();
        let has = |seen: &str| seen.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR="));
        assert!(!has(&command_env(&local(&dir), &dir).await));
        assert!(has(&command_env(&local(&dir).environment(EnvFilter::inherit_all()), &dir).await));
        assert!(has(&command_env(&local(&dir).environment(EnvFilter::base().with("CARGO_*")), &dir).await));
    }

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp_file() {
        let dir = TempDir::new();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        let ops = local(&dir);
        let written = ops.write_atomic(&Target::root().join("script.sh"), b"new content", Precondition::None);
        assert_eq!(written.unwrap(), Written { bytes: 11, other_links: 0 });
        assert_eq!(fs::read_to_string(&path).unwrap(), "new content");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o751);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![OsString::from("script.sh")]);
    }

    #[test]
    fn a_reader_sees_the_old_content_or_the_new_never_a_mix() {
        let dir = TempDir::new();
        let path = dir.path().join("data.txt");
        let target = Target::root().join("data.txt");
        let ops = local(&dir);
        let size = 1024 * 1024;
        ops.write_atomic(&target, &vec![b'a'; size], Precondition::None).unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (path, done) = (path.clone(), done.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let content = fs::read(&path).unwrap();
                    assert_eq!(content.len(), size);
                    assert!(content.iter().all(|&b| b == content[0]), "a torn read");
                    reads += 1;
                }
                reads
            })
        };
        for i in 0..20 {
            let byte = if i % 2 == 0 { b'b' } else { b'a' };
            ops.write_atomic(&target, &vec![byte; size], Precondition::None).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(reader.join().unwrap() > 0);
    }

    #[test]
    fn the_temporary_file_of_a_replacement_is_private_until_it_gets_the_old_mode() {
        let dir = TempDir::new();
        let handle = Dir::open_ambient_dir(dir.path(), ambient_authority()).unwrap();
        let (_, replacing) = create_temp_file(&handle, Path::new("secret"), true).unwrap();
        assert_eq!(replacing.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn atomic_write_refuses_a_directory() {
        let dir = TempDir::new();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let err =
            local(&dir).write_atomic(&Target::root().join("sub"), b"x", Precondition::None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    }

    #[test]
    fn walk_reports_an_invalid_glob() {
        let dir = TempDir::new();
        let options = WalkOptions { globs: vec!["a[".into()], ..Default::default() };
        let err = local(&dir).walk(&Target::root(), &options, &mut |_| true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().starts_with("invalid glob `a[`: "), "{err}");
    }
}
