//! The content-addressed store of a session's checkpoints, in a private directory of its own.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use super::{CheckpointConfig, FileState};
use crate::fs::host;

/// A file's content id: the SHA-256 of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 32]);

impl BlobId {
    pub(super) fn of(bytes: &[u8]) -> BlobId {
        BlobId(Sha256::digest(bytes).into())
    }

    fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            let _ = write!(out, "{byte:02x}");
        }
        out
    }
}

/// The content-addressed store: `objects/XX/<rest of the hash>`, reached only through the handle
/// of its `objects` directory (see [`crate::fs::host`]): a blob is written to a new random name
/// (`O_EXCL`, mode `0600`) and renamed into place, read without following a link, no further than
/// its recorded size, and checked against its hash.
#[derive(Debug)]
pub(super) struct Store {
    /// Where it is, for messages.
    pub(super) dir: PathBuf,
    /// The device and inode of its directory, which a scan of a workspace holding it leaves out.
    pub(super) id: (u64, u64),
    /// Its `objects` directory.
    objects: Dir,
    /// Its parent directory and its name there, to remove it with the session.
    owned: (Dir, OsString),
    /// Every blob in the store, with its size.
    blobs: HashMap<BlobId, u64>,
    pub(super) bytes: u64,
    /// The blob directories (by their first byte) this store made or made private.
    made: [bool; 256],
}

impl Store {
    pub(super) fn open(config: &CheckpointConfig) -> io::Result<Store> {
        let (place, parent) = match &config.dir {
            Some(dir) => (dir.clone(), host::open_state_dir(dir)?),
            None => {
                let temp = std::env::temp_dir();
                let parent = host::open_dir_path(&temp)?;
                (temp, parent)
            }
        };
        remove_abandoned_stores(&parent);
        // A new directory of our own with a random name, made with mode 0700 (a name that
        // existed already is never used: nothing can have been planted in it).
        let prefix = format!("{STORE_PREFIX}{}-", std::process::id());
        let (name, base) = host::make_private_dir(&parent, &prefix)?;
        let stat = host::stat_dir(&base)?;
        let objects = host::open_private(&base, OsStr::new("objects"))?;
        Ok(Store {
            dir: place.join(&name),
            id: (stat.dev, stat.ino),
            objects,
            owned: (parent, name),
            blobs: HashMap::new(),
            bytes: 0,
            made: [false; 256],
        })
    }

    /// The directory of `id` (its first two hexadecimal digits) and its name there.
    pub(super) fn place(id: &BlobId) -> (String, String) {
        let hex = id.hex();
        (hex[..2].to_owned(), hex[2..].to_owned())
    }

    pub(super) fn put(&mut self, bytes: &[u8]) -> io::Result<BlobId> {
        let id = BlobId::of(bytes);
        self.put_hashed(id, bytes)?;
        Ok(id)
    }

    /// Keeps `bytes`, whose hash is `id`.
    pub(super) fn put_hashed(&mut self, id: BlobId, bytes: &[u8]) -> io::Result<()> {
        if self.blobs.contains_key(&id) {
            return Ok(());
        }
        let (sub, name) = Store::place(&id);
        let index = usize::from(id.0[0]);
        // A directory this store made (or made private) is opened without more checks: still
        // beneath the store's handle, never through a link.
        let made = match self.made[index] {
            true => host::open_subdir(&self.objects, OsStr::new(&sub)).ok(),
            false => None,
        };
        let sub = match made {
            Some(dir) => dir,
            None => match host::open_private(&self.objects, OsStr::new(&sub)) {
                Ok(dir) => dir,
                // Something else put there (a link, a file): removed itself, never followed.
                Err(_)
                    if host::stat_at(&self.objects, OsStr::new(&sub))
                        .is_ok_and(|s| s.kind != host::Kind::Dir) =>
                {
                    host::remove_file(&self.objects, OsStr::new(&sub))?;
                    host::open_private(&self.objects, OsStr::new(&sub))?
                }
                Err(e) => return Err(e),
            },
        };
        self.made[index] = true;
        // Made `0600` (less the umask): no mode to set.
        host::replace_file(&sub, OsStr::new(&name), bytes, None, ".blob")?;
        self.blobs.insert(id, bytes.len() as u64);
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The bytes of `id`, checked against its hash.
    pub(super) fn get(&self, id: &BlobId) -> io::Result<Vec<u8>> {
        let missing = || {
            io::Error::new(io::ErrorKind::NotFound, "its stored copy is missing from the checkpoint store")
        };
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "its stored copy is damaged (its hash differs from the one recorded)",
            )
        };
        let size = *self.blobs.get(id).ok_or_else(missing)?;
        let (sub, name) = Store::place(id);
        let sub = match host::open_subdir(&self.objects, OsStr::new(&sub)) {
            Ok(sub) => sub,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                return Err(missing());
            }
            Err(e) => return Err(e),
        };
        match host::read_file(&sub, OsStr::new(&name), size, None)? {
            host::Content::Bytes(bytes, _) if BlobId::of(&bytes) == *id => Ok(bytes),
            host::Content::Bytes(..) | host::Content::TooLarge(_) => Err(damaged()),
            host::Content::Replaced => Err(missing()),
        }
    }

    /// Deletes every blob not in `keep`.
    pub(super) fn collect(&mut self, keep: &BTreeSet<BlobId>) {
        let drop: Vec<BlobId> = self.blobs.keys().filter(|id| !keep.contains(id)).copied().collect();
        for id in drop {
            let (sub, name) = Store::place(&id);
            let removed = match host::open_subdir(&self.objects, OsStr::new(&sub)) {
                Ok(sub) => match host::remove_file(&sub, OsStr::new(&name)) {
                    Ok(()) => true,
                    Err(e) => e.kind() == io::ErrorKind::NotFound,
                },
                Err(e) => e.kind() == io::ErrorKind::NotFound,
            };
            if removed {
                self.bytes -= self.blobs.remove(&id).unwrap_or(0);
            }
        }
    }
}

/// The prefix of the stores' directories, followed by the process id.
pub(super) const STORE_PREFIX: &str = "tools-checkpoints-";

/// Removes the stores that processes which no longer run left in the directory `temp`
/// (a process killed does not remove its own): directories of this user only, never following
/// a link (a link planted under such a name is left alone).
fn remove_abandoned_stores(temp: &Dir) {
    let Ok(names) = host::names(temp) else { return };
    for name in names {
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(STORE_PREFIX)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        if pid <= 0 || process_runs(pid) {
            continue;
        }
        let ours =
            host::stat_at(temp, &name).is_ok_and(|s| s.kind == host::Kind::Dir && s.uid == host::user());
        if ours {
            let _ = host::remove_tree(temp, &name);
        }
    }
}

/// Whether the process `pid` runs (or may: it belongs to another user).
fn process_runs(pid: i32) -> bool {
    use nix::errno::Errno;
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

impl Drop for Store {
    fn drop(&mut self) {
        let (parent, name) = &self.owned;
        if host::stat_at(parent, name).is_ok_and(|s| (s.dev, s.ino) == self.id) {
            let _ = host::remove_tree(parent, name);
        }
    }
}

pub(super) fn blob_of(state: &FileState) -> Option<BlobId> {
    match state {
        FileState::File { blob, .. } | FileState::Link { blob } => Some(*blob),
        FileState::Dir | FileState::TooLarge { .. } | FileState::NotRead { .. } => None,
    }
}
