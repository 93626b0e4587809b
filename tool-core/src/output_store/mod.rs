//! The output store: a private directory keeping the full text of truncated outputs, written and
//! read back only through its own API.
//!
//! Each output is one file named by its [`OutputRef`] (`out_20261121T163000_ab12cd34`, UTC time
//! plus 32 random bits), written as it comes with [`OutputStore::create`] (or at once with
//! [`OutputStore::save`]), up to a size limit per output (64 MiB by default) past which the
//! stored copy stops growing and the notice says so. It is read back with
//! [`OutputStore::open`], which opens only a regular file directly beneath the store's
//! directory handle and never follows a symbolic link. The directory is created `0700` and each
//! file `0600` (on unix). Files older than the retention period are deleted by a sweep of the
//! directory, which opening a store and [`OutputStore::create`] start when it is due: when the
//! last sweep of that directory, by any process sharing it, is at least one cleanup interval old
//! (or one retention period, if that is shorter). The time of the last sweep is the
//! modification time of a stamp file in the directory, so a short-lived process (`tools call`)
//! pays one `stat` when no sweep is due, and an output outlives its retention period by at most
//! one cleanup interval. A stamp that is not a regular file, or dated in the future, proves
//! nothing and the sweep runs. A sweep also keeps the store under a total size (1 GiB by
//! default, [`OutputStoreBuilder::max_total_bytes`]): past it, the oldest outputs are deleted
//! first. A store also sweeps, whatever the time, before an output once it has stored its total
//! size since its last sweep: however fast one process writes outputs, the store outgrows its
//! total by at most that much and one output. (Processes that each write one output, as
//! `tools call` does, are held to the total at each cleanup interval.)
//! A sweep only ever deletes regular files whose names are references, directly inside the
//! store's directory: it never recurses and never follows a symbolic link.
//!
//! Whoever installs a store also says, with a [`ReadHint`], how the model reads a stored
//! output back (which tools to call); the notice of every output saved here uses it.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use memchr::memchr_iter;

use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::truncate::{OutputCut, ReadHint, TruncationInfo, count_lines};

mod reference;
mod writer;

pub use reference::OutputRef;
pub use writer::{OutputWriter, StoredOutput};

/// How long stored outputs are kept by default: 7 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How often the retention cleanup sweeps a store's directory by default: hourly.
pub const DEFAULT_CLEANUP_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// The largest stored copy of one output by default: 64 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// The most a store keeps in all by default: 1 GiB (sixteen outputs of the largest size).
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;

/// The application directory under the user's data directory.
pub const APP_DIR_NAME: &str = "tool-runtime";

/// The store's directory inside [`APP_DIR_NAME`].
pub const STORE_DIR_NAME: &str = "outputs";

/// The file in the store's directory whose modification time is when the directory was last
/// swept by the retention cleanup, by any process. Not named like a reference, so no reader and
/// no sweep ever takes it for an output.
const SWEEP_STAMP: &str = ".last-cleanup";

/// Why a stored output could not be read back.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputStoreError {
    /// The text is not a reference (see [`OutputRef::is_valid`]).
    InvalidReference(String),
    /// No output is stored under this reference (never saved here, or expired).
    NotFound(OutputRef),
    /// The file system failed.
    Io(io::Error),
}

impl fmt::Display for OutputStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputStoreError::InvalidReference(text) => write!(
                f,
                "{} is not an output reference: use the reference from a truncation notice, \
                 such as out_20261121T163000_ab12cd34",
                crate::words::quote(text)
            ),
            OutputStoreError::NotFound(reference) => write!(
                f,
                "no stored output {reference}: it has expired or was saved elsewhere; run the original \
                 request again"
            ),
            OutputStoreError::Io(error) => write!(f, "the output store could not be read: {error}"),
        }
    }
}

impl std::error::Error for OutputStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutputStoreError::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for OutputStoreError {
    fn from(error: io::Error) -> Self {
        OutputStoreError::Io(error)
    }
}

impl From<OutputStoreError> for ToolError {
    fn from(error: OutputStoreError) -> Self {
        let message = error.to_string();
        match error {
            OutputStoreError::InvalidReference(_) => ToolError::invalid_arguments(message),
            OutputStoreError::NotFound(_) => ToolError::not_found(message),
            OutputStoreError::Io(io_error) => ToolError::execution(message).with_source(io_error),
        }
    }
}

/// A page of lines read back from a stored output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLines {
    /// The lines, with their original line endings.
    pub text: String,
    /// The 1-based number of the first line in `text`.
    pub first_line: usize,
    /// How many lines `text` holds (0 when `first_line` is past the end).
    pub lines: usize,
    /// How many lines the whole output has.
    pub total_lines: usize,
    /// How many bytes the whole output has.
    pub total_bytes: usize,
}

/// What one retention cleanup did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Expired outputs deleted.
    pub removed: usize,
    /// Outputs within the retention period deleted, oldest first, to bring the store under its
    /// total size.
    pub trimmed: usize,
    /// Outputs still within the retention period.
    pub kept: usize,
    /// Entries left alone: not a regular file, not named like a reference, or not deletable.
    pub skipped: usize,
}

/// Settings for opening an [`OutputStore`].
#[derive(Debug, Clone)]
pub struct OutputStoreBuilder {
    dir: Option<PathBuf>,
    retention: Duration,
    cleanup_interval: Duration,
    max_output_bytes: usize,
    max_total_bytes: u64,
    read_hint: ReadHint,
}

impl OutputStoreBuilder {
    /// Uses `dir` instead of the default directory under the user's data directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// How long outputs are kept (default [`DEFAULT_RETENTION`]).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// How often the directory is swept of expired outputs, by whichever process sharing it
    /// opens a store or creates an output when a sweep is due (default
    /// [`DEFAULT_CLEANUP_INTERVAL`]).
    pub fn cleanup_interval(mut self, interval: Duration) -> Self {
        self.cleanup_interval = interval;
        self
    }

    /// The largest stored copy of one output, in bytes (default [`DEFAULT_MAX_OUTPUT_BYTES`]).
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// The most the store keeps in all, in bytes (default [`DEFAULT_MAX_TOTAL_BYTES`]): each
    /// sweep deletes the oldest outputs past it.
    pub fn max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = bytes;
        self
    }

    /// How the notice tells the model to read an output stored here (default
    /// [`ReadHint::neutral`], which names no tool).
    pub fn read_hint(mut self, hint: ReadHint) -> Self {
        self.read_hint = hint;
        self
    }

    /// Creates the directory if needed, makes it private, and runs the retention cleanup if it
    /// is due (see the [module docs](self)).
    pub fn open(self) -> io::Result<OutputStore> {
        let path = match self.dir {
            Some(dir) => dir,
            None => OutputStore::default_dir().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no data directory for the output store: neither XDG_DATA_HOME nor HOME is set",
                )
            })?,
        };
        let handle = open_private_dir(&path)?;
        let store = OutputStore {
            path,
            handle: RwLock::new(Arc::new(handle)),
            retention: self.retention,
            cleanup_interval: self.cleanup_interval,
            last_cleanup: Mutex::new(Instant::now()),
            written: Arc::default(),
            max_output_bytes: self.max_output_bytes,
            max_total_bytes: self.max_total_bytes,
            read_hint: self.read_hint,
        };
        // Best effort: a failed cleanup must not stop outputs from being saved.
        store.sweep_if_due();
        Ok(store)
    }
}

/// A private directory of full tool outputs, addressed by [`OutputRef`].
#[derive(Debug)]
pub struct OutputStore {
    path: PathBuf,
    /// The directory, opened once (and again if something removed it).
    handle: RwLock<Arc<Dir>>,
    retention: Duration,
    cleanup_interval: Duration,
    last_cleanup: Mutex<Instant>,
    /// Bytes its outputs stored since this store last swept (shared with its writers).
    written: Arc<AtomicU64>,
    max_output_bytes: usize,
    max_total_bytes: u64,
    read_hint: ReadHint,
}

impl OutputStore {
    /// Settings for a store, starting from the defaults.
    pub fn builder() -> OutputStoreBuilder {
        OutputStoreBuilder {
            dir: None,
            retention: DEFAULT_RETENTION,
            cleanup_interval: DEFAULT_CLEANUP_INTERVAL,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            read_hint: ReadHint::default(),
        }
    }

    /// Opens (creating if needed) a store in `dir` with the default settings.
    pub fn open_dir(dir: impl Into<PathBuf>) -> io::Result<Self> {
        Self::builder().dir(dir).open()
    }

    /// Opens the store in [`OutputStore::default_dir`] with the default settings.
    pub fn open_default() -> io::Result<Self> {
        Self::builder().open()
    }

    /// `<data dir>/tool-runtime/outputs`, where the data directory is `$XDG_DATA_HOME` or
    /// `~/.local/share` (macOS: `~/Library/Application Support`, Windows: `%LOCALAPPDATA%`).
    pub fn default_dir() -> Option<PathBuf> {
        let data = if cfg!(windows) {
            std::env::var_os("LOCALAPPDATA").map(PathBuf::from).filter(|p| p.is_absolute())
        } else {
            data_dir_from(
                std::env::var_os("XDG_DATA_HOME"),
                std::env::var_os("HOME"),
                cfg!(target_os = "macos"),
            )
        };
        data.map(|dir| dir.join(APP_DIR_NAME).join(STORE_DIR_NAME))
    }

    /// The store's directory, for the operator (read outputs back with [`OutputStore::open`]).
    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// How long outputs are kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// The largest stored copy of one output, in bytes.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// How the notice tells the model to read an output stored here.
    pub fn read_hint(&self) -> &ReadHint {
        &self.read_hint
    }

    /// Starts a new private file for one output, to be written as it comes.
    ///
    /// Also runs the retention cleanup if it is due (checked at most once per cleanup interval
    /// by each store), and recreates the directory if something removed it while the store was
    /// open.
    pub fn create(&self) -> io::Result<OutputWriter> {
        self.cleanup_if_due();
        let mut dir = self.handle();
        let (mut collisions, mut recreated) = (0u32, false);
        loop {
            let reference = OutputRef::new_random();
            match create_private_file(&dir, reference.as_str()) {
                Ok(file) => {
                    return Ok(OutputWriter::new(
                        reference,
                        file,
                        self.max_output_bytes,
                        self.written.clone(),
                    ));
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && collisions < 16 => {
                    collisions += 1
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound && !recreated => {
                    recreated = true;
                    dir = self.reopen()?;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Saves `text` as a new output (up to the size limit) and says where.
    pub fn save(&self, text: &str) -> io::Result<StoredOutput> {
        let mut writer = self.create()?;
        writer.write_str(text)?;
        writer.finish()
    }

    /// Saves the document of a cut output and puts the output back with the notice pointing at
    /// the saved copy (with this store's [`ReadHint`]), as the dispatcher does for every output
    /// it truncates. When the document cannot be saved, the notice says so and the error is
    /// recorded for the operator.
    pub fn save_cut(&self, mut cut: OutputCut, output: &mut ToolOutput) -> TruncationInfo {
        match self.save(cut.document()) {
            Ok(stored) => stored.record_in(cut.info_mut()),
            Err(error) => cut.info_mut().record_save_error(error),
        }
        cut.apply(output, &self.read_hint)
    }

    /// Opens the stored output `reference` for reading: only a regular file directly in the
    /// store, opened beneath its directory handle without following a symbolic link (and without
    /// blocking on anything planted there, such as a FIFO).
    pub fn open(&self, reference: &str) -> Result<File, OutputStoreError> {
        let reference = OutputRef::parse(reference)?;
        let dir = self.handle();
        let not_found = |reference: OutputRef| OutputStoreError::NotFound(reference);
        match dir.symlink_metadata(reference.as_str()) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(not_found(reference)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Err(not_found(reference)),
            Err(error) => return Err(OutputStoreError::Io(error)),
        }
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No).nonblock(true);
        // Whatever was swapped in since the check is refused here: a link by the open, anything
        // but a regular file by the check after it.
        let file = match dir.open_with(reference.as_str(), &options) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Err(not_found(reference)),
            Err(error) => return Err(OutputStoreError::Io(error)),
        };
        if !file.metadata()?.is_file() {
            return Err(not_found(reference));
        }
        Ok(file.into_std())
    }

    /// The whole stored output `reference`.
    pub fn read_to_string(&self, reference: &str) -> Result<String, OutputStoreError> {
        let mut bytes = Vec::new();
        self.open(reference)?.read_to_end(&mut bytes)?;
        String::from_utf8(bytes).map_err(|_| {
            OutputStoreError::Io(io::Error::new(io::ErrorKind::InvalidData, "the stored output is not UTF-8"))
        })
    }

    /// Up to `limit` lines of the stored output `reference`, starting at the 1-based line
    /// `offset` (0 is read as 1). Lines end at `\n`; a trailing `\n` does not start another line.
    pub fn read_lines(
        &self,
        reference: &str,
        offset: usize,
        limit: usize,
    ) -> Result<OutputLines, OutputStoreError> {
        let text = self.read_to_string(reference)?;
        Ok(lines_page(&text, offset.max(1), limit))
    }

    /// Deletes expired outputs now, then the oldest ones past the total size (see the module
    /// docs for what is ever deleted), and records the sweep for every process sharing the
    /// directory.
    pub fn cleanup(&self) -> io::Result<CleanupReport> {
        let dir = self.handle();
        let mut report = CleanupReport::default();
        let now = SystemTime::now();
        // The outputs kept: when each was last written, its name, its size.
        let mut kept: Vec<(Option<SystemTime>, OsString, u64)> = Vec::new();
        for entry in dir.entries()? {
            let Ok(entry) = entry else {
                report.skipped += 1;
                continue;
            };
            let name = entry.file_name();
            if name == SWEEP_STAMP {
                continue;
            }
            // `DirEntry::metadata` does not follow symbolic links.
            let regular = entry.metadata().ok().filter(|meta| meta.is_file());
            let (Some(meta), Some(true)) = (regular, name.to_str().map(OutputRef::is_valid)) else {
                report.skipped += 1;
                continue;
            };
            let modified = meta.modified().ok().map(cap_std::time::SystemTime::into_std);
            let age = modified.and_then(|modified| now.duration_since(modified).ok());
            if age.is_some_and(|age| age > self.retention) {
                match dir.remove_file(&name) {
                    Ok(()) => report.removed += 1,
                    Err(_) => report.skipped += 1,
                }
            } else {
                kept.push((modified, name, meta.len()));
            }
        }
        let mut total: u64 = kept.iter().map(|(_, _, len)| len).sum();
        if total > self.max_total_bytes {
            // Oldest first; a time that cannot be read counts as oldest. Outputs modified in the
            // same instant go in the order of their names, which is arbitrary within a second.
            kept.sort();
            let mut oldest = kept.into_iter();
            while total > self.max_total_bytes {
                let Some((_, name, len)) = oldest.next() else { break };
                match dir.remove_file(&name) {
                    Ok(()) => {
                        report.trimmed += 1;
                        total -= len;
                    }
                    Err(_) => report.skipped += 1,
                }
            }
            report.kept = oldest.len();
        } else {
            report.kept = kept.len();
        }
        // Best effort: without a stamp, the next store opened sweeps again.
        let _ = stamp_sweep(&dir, now);
        Ok(report)
    }

    /// Sweeps the directory unless it was swept, by this or another process, less than a
    /// cleanup interval (or retention period, if shorter) ago.
    fn sweep_if_due(&self) {
        if !self.swept_recently() {
            let _ = self.cleanup();
        }
    }

    /// Whether the stamp of the last sweep is a regular file dated within the last cleanup
    /// interval (or retention period, if shorter). One `stat`, not following a link.
    fn swept_recently(&self) -> bool {
        let period = self.cleanup_interval.min(self.retention);
        let Ok(meta) = self.handle().symlink_metadata(SWEEP_STAMP) else {
            return false;
        };
        let Some(swept) = meta.modified().ok().filter(|_| meta.is_file()) else {
            return false;
        };
        // A stamp from the future (a clock set back, a file touched by hand) proves nothing.
        SystemTime::now().duration_since(swept.into_std()).is_ok_and(|age| age < period)
    }

    fn handle(&self) -> Arc<Dir> {
        self.handle.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Recreates the directory (private) and opens it again.
    fn reopen(&self) -> io::Result<Arc<Dir>> {
        let handle = Arc::new(open_private_dir(&self.path)?);
        *self.handle.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = handle.clone();
        Ok(handle)
    }

    /// The check of a long-lived store: at most once per cleanup interval, it sweeps if no
    /// other process did meanwhile; once its outputs stored its total size since its last
    /// sweep, it sweeps whatever the time.
    fn cleanup_if_due(&self) {
        // Reset only from a count past the total: of writers past it at once, one sweeps, and
        // no byte stored meanwhile is lost from the next count.
        let past_total = |written: u64| (written >= self.max_total_bytes).then_some(0);
        if self.written.fetch_update(Ordering::Relaxed, Ordering::Relaxed, past_total).is_ok() {
            let _ = self.cleanup();
            return;
        }
        let Ok(mut last) = self.last_cleanup.try_lock() else {
            return;
        };
        if last.elapsed() >= self.cleanup_interval.min(self.retention) {
            *last = Instant::now();
            self.sweep_if_due();
        }
    }
}

fn data_dir_from(xdg_data_home: Option<OsString>, home: Option<OsString>, macos: bool) -> Option<PathBuf> {
    let home = home.map(PathBuf::from).filter(|p| p.is_absolute());
    if macos {
        return home.map(|home| home.join("Library").join("Application Support"));
    }
    // The XDG spec says a relative value is invalid and must be ignored.
    xdg_data_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|home| home.join(".local").join("share")))
}

fn lines_page(text: &str, offset: usize, limit: usize) -> OutputLines {
    let bytes = text.as_bytes();
    let total_lines = count_lines(bytes);
    let start = if offset <= 1 {
        0
    } else {
        memchr_iter(b'\n', bytes).nth(offset - 2).map_or(bytes.len(), |pos| pos + 1)
    };
    let rest = &bytes[start..];
    let (end, lines) = if limit == 0 || rest.is_empty() {
        (start, 0)
    } else {
        match memchr_iter(b'\n', rest).nth(limit - 1) {
            Some(pos) => (start + pos + 1, limit),
            None => (bytes.len(), count_lines(rest)),
        }
    };
    OutputLines {
        // Both ends follow a `\n` or are an end of the text, so they are character boundaries.
        text: text.get(start..end).unwrap_or_default().to_owned(),
        first_line: offset,
        lines,
        total_lines,
        total_bytes: bytes.len(),
    }
}

/// Creates `path` (and its parents) if needed, makes it private, and opens it as a handle. The
/// directory itself is opened without following a link (its parents are the user's), and its
/// mode is set through that handle: a link a command planted by its name (were the path ever
/// within its reach) is refused rather than followed to a directory elsewhere.
fn open_private_dir(path: &Path) -> io::Result<Dir> {
    let not_a_dir = || {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("the output store path {} exists and is not a directory", path.display()),
        )
    };
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => (parent, name),
        (_, Some(name)) => (Path::new("."), name),
        _ => return Err(not_a_dir()),
    };
    fs::create_dir_all(parent)?;
    let parent = Dir::open_ambient_dir(parent, ambient_authority())?;
    let mut builder = cap_std::fs::DirBuilder::new();
    #[cfg(unix)]
    cap_std::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match parent.create_dir_with(name, &builder) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let dir = match cap_fs_ext::DirExt::open_dir_nofollow(&parent, name) {
        Ok(dir) => dir,
        Err(error) if error.kind() == io::ErrorKind::NotADirectory || error.raw_os_error() == Some(40) => {
            return Err(not_a_dir());
        }
        Err(error) => return Err(error),
    };
    let meta = dir.dir_metadata()?;
    if !meta.is_dir() {
        return Err(not_a_dir());
    }
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt as _;
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o777 != 0o700 {
            // `.` of the handle: the directory just opened, whatever its name leads to now.
            let private = cap_std::fs::Permissions::from_std(fs::Permissions::from_mode(0o700));
            dir.set_permissions(".", private)?;
        }
    }
    Ok(dir)
}

/// Dates the stamp of the last sweep `now`, creating it private, and replacing whatever else
/// holds its name (a link, a FIFO) without following or blocking on it.
fn stamp_sweep(dir: &Dir, now: SystemTime) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).follow(FollowSymlinks::No).nonblock(true);
    #[cfg(unix)]
    cap_std::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let open_regular = || {
        let file = dir.open_with(SWEEP_STAMP, &options)?;
        if file.metadata()?.is_file() {
            Ok(file)
        } else {
            Err(io::Error::new(io::ErrorKind::InvalidData, "the sweep stamp is not a regular file"))
        }
    };
    let file = match open_regular() {
        Ok(file) => file,
        Err(_) => {
            dir.remove_file(SWEEP_STAMP)?;
            open_regular()?
        }
    };
    file.into_std().set_modified(now)
}

fn create_private_file(dir: &Dir, name: &str) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).follow(FollowSymlinks::No);
    #[cfg(unix)]
    cap_std::fs::OpenOptionsExt::mode(&mut options, 0o600);
    dir.open_with(name, &options).map(cap_std::fs::File::into_std)
}

#[cfg(test)]
mod tests;
