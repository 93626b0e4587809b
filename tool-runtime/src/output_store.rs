//! The output store: a private directory keeping the full text of truncated outputs, read back by reference.
//!
//! Each truncated output is saved as one file named by its reference (`out_20261121T163000_ab12cd34`,
//! UTC time plus 32 random bits). The directory is created `0700` and each file `0600` (on unix).
//! Files older than the retention period are deleted when a store is opened and then at most once
//! per cleanup interval, from [`OutputStore::save`]. Cleanup only ever deletes regular files whose
//! names are references, directly inside the store's directory: it never recurses and never
//! follows a symbolic link.

use std::collections::hash_map::RandomState;
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memchr::memchr_iter;

use crate::error::ToolError;
use crate::truncate::count_lines;

/// How long stored outputs are kept by default: 7 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How often a long-lived store repeats its retention cleanup by default: hourly.
pub const DEFAULT_CLEANUP_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// The application directory under the user's data directory.
pub const APP_DIR_NAME: &str = "tool-runtime";

/// The store's directory inside [`APP_DIR_NAME`].
pub const STORE_DIR_NAME: &str = "outputs";

const REF_PREFIX: &str = "out_";
/// `out_` + `YYYYMMDD` + `T` + `HHMMSS` + `_` + 8 hex digits.
const REF_LEN: usize = 4 + 8 + 1 + 6 + 1 + 8;

/// The reference of one stored output, e.g. `out_20261121T163000_ab12cd34`.
///
/// A reference is an opaque id, never a path: [`OutputRef::parse`] accepts exactly that shape,
/// so a reference coming from a model cannot name a file outside the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutputRef(String);

impl OutputRef {
    /// Validates `text` as a reference.
    pub fn parse(text: &str) -> Result<Self, OutputStoreError> {
        if Self::is_valid(text) {
            Ok(OutputRef(text.to_owned()))
        } else {
            Err(OutputStoreError::InvalidReference(text.to_owned()))
        }
    }

    /// Whether `text` has the shape of a reference: `out_` + `YYYYMMDD` + `T` + `HHMMSS` + `_` +
    /// 8 lowercase hexadecimal digits.
    pub fn is_valid(text: &str) -> bool {
        let bytes = text.as_bytes();
        if bytes.len() != REF_LEN || !text.starts_with(REF_PREFIX) {
            return false;
        }
        let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
        digits(4..12)
            && bytes[12] == b'T'
            && digits(13..19)
            && bytes[19] == b'_'
            && bytes[20..].iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    }

    /// The reference as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OutputRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for OutputRef {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

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
                "{text:?} is not an output reference: use the reference from a truncation notice, \
                 such as out_20261121T163000_ab12cd34"
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

    /// How often [`OutputStore::save`] repeats the cleanup (default [`DEFAULT_CLEANUP_INTERVAL`]).
    pub fn cleanup_interval(mut self, interval: Duration) -> Self {
        self.cleanup_interval = interval;
        self
    }

    /// Creates the directory if needed, makes it private, and runs the retention cleanup.
    pub fn open(self) -> io::Result<OutputStore> {
        let dir = match self.dir {
            Some(dir) => dir,
            None => OutputStore::default_dir().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no data directory for the output store: neither XDG_DATA_HOME nor HOME is set",
                )
            })?,
        };
        create_private_dir(&dir)?;
        let store = OutputStore {
            dir,
            retention: self.retention,
            cleanup_interval: self.cleanup_interval,
            last_cleanup: Mutex::new(Instant::now()),
        };
        // Best effort: a failed cleanup must not stop outputs from being saved.
        let _ = store.cleanup();
        Ok(store)
    }
}

/// A private directory of full tool outputs, addressed by [`OutputRef`].
#[derive(Debug)]
pub struct OutputStore {
    dir: PathBuf,
    retention: Duration,
    cleanup_interval: Duration,
    last_cleanup: Mutex<Instant>,
}

impl OutputStore {
    /// Settings for a store, starting from the defaults.
    pub fn builder() -> OutputStoreBuilder {
        OutputStoreBuilder {
            dir: None,
            retention: DEFAULT_RETENTION,
            cleanup_interval: DEFAULT_CLEANUP_INTERVAL,
        }
    }

    /// Opens (creating if needed) a store in `dir` with the default retention.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        Self::builder().dir(dir).open()
    }

    /// Opens the store in [`OutputStore::default_dir`] with the default retention.
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

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How long outputs are kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// Saves `text` as a new private file and returns its reference.
    ///
    /// Also repeats the retention cleanup when the cleanup interval has passed, and recreates the
    /// directory if something removed it while the store was open.
    pub fn save(&self, text: &str) -> io::Result<OutputRef> {
        self.cleanup_if_due();
        let (mut collisions, mut recreated) = (0u32, false);
        loop {
            let reference = new_reference();
            match create_private_file(&self.dir.join(reference.as_str())) {
                Ok(mut file) => {
                    file.write_all(text.as_bytes())?;
                    return Ok(reference);
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && collisions < 16 => {
                    collisions += 1
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound && !recreated => {
                    recreated = true;
                    create_private_dir(&self.dir)?;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The path of the stored output `reference`, after checking that the reference is valid and
    /// names a regular file (not a symbolic link) in this store.
    pub fn path(&self, reference: &str) -> Result<PathBuf, OutputStoreError> {
        let reference = OutputRef::parse(reference)?;
        let path = self.dir.join(reference.as_str());
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_file() => Ok(path),
            Ok(_) => Err(OutputStoreError::NotFound(reference)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(OutputStoreError::NotFound(reference))
            }
            Err(error) => Err(OutputStoreError::Io(error)),
        }
    }

    /// The whole stored output `reference`.
    pub fn read_to_string(&self, reference: &str) -> Result<String, OutputStoreError> {
        let path = self.path(reference)?;
        let mut file = open_regular_file(&path).map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => match OutputRef::parse(reference) {
                Ok(reference) => OutputStoreError::NotFound(reference),
                Err(invalid) => invalid,
            },
            _ => OutputStoreError::Io(error),
        })?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
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

    /// Deletes expired outputs now (see the module docs for what is ever deleted).
    pub fn cleanup(&self) -> io::Result<CleanupReport> {
        let mut report = CleanupReport::default();
        let now = SystemTime::now();
        for entry in fs::read_dir(&self.dir)? {
            let Ok(entry) = entry else {
                report.skipped += 1;
                continue;
            };
            let name = entry.file_name();
            // `DirEntry::metadata` does not follow symbolic links.
            let regular = entry.metadata().ok().filter(|meta| meta.file_type().is_file());
            let (Some(meta), Some(true)) = (regular, name.to_str().map(OutputRef::is_valid)) else {
                report.skipped += 1;
                continue;
            };
            let age = meta.modified().ok().and_then(|modified| now.duration_since(modified).ok());
            if age.is_some_and(|age| age > self.retention) {
                match fs::remove_file(entry.path()) {
                    Ok(()) => report.removed += 1,
                    Err(_) => report.skipped += 1,
                }
            } else {
                report.kept += 1;
            }
        }
        Ok(report)
    }

    fn cleanup_if_due(&self) {
        let Ok(mut last) = self.last_cleanup.try_lock() else {
            return;
        };
        if last.elapsed() >= self.cleanup_interval {
            *last = Instant::now();
            let _ = self.cleanup();
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

fn new_reference() -> OutputRef {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    // `RandomState` is seeded from the OS once per thread, so ids differ across processes and
    // threads even when clocks collide; the counter separates ids within one thread.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let random = hasher.finish() as u32;
    OutputRef(format!("{REF_PREFIX}{}_{random:08x}", utc_timestamp(now.as_secs())))
}

/// `YYYYMMDDTHHMMSS` in UTC for seconds since the Unix epoch.
fn utc_timestamp(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year % 10_000, month, day)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("the output store path {} exists and is not a directory", dir.display()),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o777 != 0o700 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

fn create_private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Opens `path` for reading only if it is a regular file, and checks that the file opened is the
/// one inspected, so a symbolic link swapped in between is not followed.
fn open_regular_file(path: &Path) -> io::Result<File> {
    let before = fs::symlink_metadata(path)?;
    if !before.file_type().is_file() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "not a regular file"));
    }
    let file = File::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let opened = file.metadata()?;
        if (opened.dev(), opened.ino()) != (before.dev(), before.ino()) {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the file changed while being opened"));
        }
    }
    Ok(file)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let path = std::env::temp_dir().join(format!(
                "tool-runtime-test-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("create temp dir");
            TempDir(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn age(path: &Path, age: Duration) {
        let file = OpenOptions::new().write(true).open(path).expect("open for set_modified");
        file.set_modified(SystemTime::now() - age).expect("set_modified");
    }

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn references_have_one_exact_shape() {
        for good in ["out_20261121T163000_ab12cd34", "out_19700101T000000_00000000"] {
            assert!(OutputRef::is_valid(good), "{good}");
            assert_eq!(OutputRef::parse(good).expect("valid").as_str(), good);
        }
        for bad in [
            "",
            "out_",
            "../out_20261121T163000_ab12cd34",
            "out_20261121T163000_ab12cd34/..",
            "out_20261121T163000_ab12cd3",
            "out_20261121T163000_ab12cd345",
            "out_20261121T163000_AB12CD34",
            "out_20261121t163000_ab12cd34",
            "out_2026112xT163000_ab12cd34",
            "out_20261121T163000-ab12cd34",
            "OUT_20261121T163000_ab12cd34",
            "out_20261121T163000_ab12cd3g",
            "/etc/passwd",
            "..",
            "out_20261121T163000_ab12cd\u{e9}",
            "out_2026\u{e9}121T16300_ab12cd34",
        ] {
            assert!(!OutputRef::is_valid(bad), "{bad:?}");
            assert!(matches!(OutputRef::parse(bad), Err(OutputStoreError::InvalidReference(t)) if t == bad));
        }
    }

    #[test]
    fn generated_references_are_valid_and_distinct() {
        let refs: Vec<OutputRef> = (0..200).map(|_| new_reference()).collect();
        for r in &refs {
            assert!(OutputRef::is_valid(r.as_str()), "{r}");
        }
        let mut unique = refs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), refs.len());
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "19700101T000000");
        assert_eq!(utc_timestamp(951_782_400), "20000229T000000");
        assert_eq!(utc_timestamp(1_795_278_600), "20261121T163000");
        assert_eq!(utc_timestamp(4_102_444_799), "20991231T235959");
    }

    #[test]
    fn data_dir_follows_xdg_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(data_dir_from(os("/x/data"), os("/home/u"), false), Some(PathBuf::from("/x/data")));
        assert_eq!(
            data_dir_from(os("relative"), os("/home/u"), false),
            Some(PathBuf::from("/home/u/.local/share"))
        );
        assert_eq!(data_dir_from(None, os("/home/u"), false), Some(PathBuf::from("/home/u/.local/share")));
        assert_eq!(
            data_dir_from(os("/x/data"), os("/Users/u"), true),
            Some(PathBuf::from("/Users/u/Library/Application Support"))
        );
        assert_eq!(data_dir_from(None, None, false), None);
        assert_eq!(data_dir_from(None, os(""), false), None);
    }

    #[test]
    fn save_then_read_back() {
        let tmp = TempDir::new("save");
        let store = OutputStore::open(tmp.path().join("store")).expect("open");
        let text = "one\r\ntwo\nthree \u{1F600}\nfour";
        let r = store.save(text).expect("save");
        assert!(OutputRef::is_valid(r.as_str()));
        assert_eq!(store.path(r.as_str()).expect("path"), tmp.path().join("store").join(r.as_str()));
        assert_eq!(store.read_to_string(r.as_str()).expect("read"), text);
        let page = store.read_lines(r.as_str(), 2, 2).expect("lines");
        assert_eq!(
            page,
            OutputLines {
                text: "two\nthree \u{1F600}\n".into(),
                first_line: 2,
                lines: 2,
                total_lines: 4,
                total_bytes: text.len()
            }
        );
        let first = store.read_lines(r.as_str(), 0, 1).expect("lines");
        assert_eq!((first.text.as_str(), first.first_line, first.lines), ("one\r\n", 1, 1));
        let last = store.read_lines(r.as_str(), 4, 10).expect("lines");
        assert_eq!((last.text.as_str(), last.lines), ("four", 1));
        let past = store.read_lines(r.as_str(), 5, 10).expect("lines");
        assert_eq!((past.text.as_str(), past.lines, past.total_lines), ("", 0, 4));
        let none = store.read_lines(r.as_str(), 2, 0).expect("lines");
        assert_eq!((none.text.as_str(), none.lines), ("", 0));
    }

    #[test]
    fn line_pages_with_trailing_newline() {
        let page = lines_page("a\nb\n", 2, 5);
        assert_eq!((page.text.as_str(), page.lines, page.total_lines), ("b\n", 1, 2));
        let past = lines_page("a\nb\n", 3, 5);
        assert_eq!((past.text.as_str(), past.lines), ("", 0));
        let empty = lines_page("", 1, 5);
        assert_eq!((empty.text.as_str(), empty.lines, empty.total_lines), ("", 0, 0));
    }

    #[test]
    fn invalid_and_unknown_references_are_rejected() {
        let tmp = TempDir::new("invalid");
        let store = OutputStore::open(tmp.path()).expect("open");
        fs::write(tmp.path().parent().expect("parent").join("secret.txt"), "secret").ok();
        for bad in ["../secret.txt", "/etc/passwd", "out_x", "", "out_20261121T163000_ab12cd34/../x"] {
            assert!(matches!(store.path(bad), Err(OutputStoreError::InvalidReference(_))), "{bad}");
            assert!(matches!(store.read_to_string(bad), Err(OutputStoreError::InvalidReference(_))), "{bad}");
            assert!(
                matches!(store.read_lines(bad, 1, 1), Err(OutputStoreError::InvalidReference(_))),
                "{bad}"
            );
        }
        let missing = "out_20261121T163000_ab12cd34";
        let error = store.read_to_string(missing).expect_err("missing");
        assert!(matches!(&error, OutputStoreError::NotFound(r) if r.as_str() == missing));
        assert_eq!(
            error.to_string(),
            "no stored output out_20261121T163000_ab12cd34: it has expired or was saved elsewhere; run the \
             original request again"
        );
        let tool_error = ToolError::from(OutputStoreError::InvalidReference("../x".into()));
        assert_eq!(tool_error.kind(), crate::error::ErrorKind::InvalidArguments);
        assert_eq!(
            tool_error.message(),
            "\"../x\" is not an output reference: use the reference from a truncation notice, such as \
             out_20261121T163000_ab12cd34"
        );
        assert_eq!(ToolError::from(error).kind(), crate::error::ErrorKind::NotFound);
    }

    #[cfg(unix)]
    #[test]
    fn directory_is_0700_and_files_0600() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new("perms");
        let dir = tmp.path().join("a").join("store");
        let store = OutputStore::open(&dir).expect("open");
        assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
        let r = store.save("x").expect("save");
        let file = dir.join(r.as_str());
        assert_eq!(fs::metadata(&file).expect("file").permissions().mode() & 0o777, 0o600);

        // An existing directory with looser permissions is made private when opened.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        OutputStore::open(&dir).expect("reopen");
        assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn opening_a_store_deletes_only_expired_outputs() {
        let tmp = TempDir::new("retention");
        let dir = tmp.path().join("store");
        let store = OutputStore::open(&dir).expect("open");
        let old = store.save("old").expect("save");
        let fresh = store.save("fresh").expect("save");
        let almost = store.save("almost").expect("save");
        age(&dir.join(old.as_str()), 8 * DAY);
        age(&dir.join(almost.as_str()), 6 * DAY);
        // Old files not named like a reference are not ours.
        let foreign = dir.join("notes.txt");
        fs::write(&foreign, "keep").expect("write");
        age(&foreign, 30 * DAY);
        // A directory named like a reference is not a regular file.
        let subdir = dir.join("out_20000101T000000_00000000");
        fs::create_dir(&subdir).expect("mkdir");

        let reopened = OutputStore::open(&dir).expect("reopen");
        assert!(!dir.join(old.as_str()).exists());
        assert_eq!(reopened.read_to_string(fresh.as_str()).expect("fresh"), "fresh");
        assert_eq!(reopened.read_to_string(almost.as_str()).expect("almost"), "almost");
        assert!(foreign.exists());
        assert!(subdir.is_dir());
        assert!(matches!(reopened.read_to_string(old.as_str()), Err(OutputStoreError::NotFound(_))));
        assert_eq!(reopened.cleanup().expect("cleanup"), CleanupReport { removed: 0, kept: 2, skipped: 2 });
    }

    #[cfg(unix)]
    #[test]
    fn a_removed_directory_is_recreated_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new("recreate");
        let dir = tmp.path().join("store");
        let store = OutputStore::open(&dir).expect("open");
        fs::remove_dir_all(&dir).expect("remove");
        let r = store.save("again").expect("save");
        assert_eq!(store.read_to_string(r.as_str()).expect("read"), "again");
        assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn custom_retention_and_periodic_cleanup_on_save() {
        let tmp = TempDir::new("periodic");
        let store = OutputStore::builder()
            .dir(tmp.path())
            .retention(Duration::from_secs(60))
            .cleanup_interval(Duration::ZERO)
            .open()
            .expect("open");
        assert_eq!(store.retention(), Duration::from_secs(60));
        let first = store.save("first").expect("save");
        age(&tmp.path().join(first.as_str()), Duration::from_secs(120));
        let second = store.save("second").expect("save");
        assert!(!tmp.path().join(first.as_str()).exists());
        assert!(tmp.path().join(second.as_str()).exists());
    }

    #[cfg(unix)]
    #[test]
    fn cleanup_never_follows_symlinks() {
        use std::os::unix::fs::symlink;
        let tmp = TempDir::new("symlink");
        let dir = tmp.path().join("store");
        let outside_dir = tmp.path().join("outside");
        fs::create_dir_all(&outside_dir).expect("mkdir");
        let outside_file = tmp.path().join("outside.txt");
        fs::write(&outside_file, "precious").expect("write");
        age(&outside_file, 30 * DAY);
        let outside_nested = outside_dir.join("out_20000101T000000_00000001");
        fs::write(&outside_nested, "precious too").expect("write");
        age(&outside_nested, 30 * DAY);

        let store = OutputStore::open(&dir).expect("open");
        let link = dir.join("out_20000101T000000_00000002");
        symlink(&outside_file, &link).expect("symlink");
        let dir_link = dir.join("out_20000101T000000_00000003");
        symlink(&outside_dir, &dir_link).expect("symlink");

        let report = store.cleanup().expect("cleanup");
        assert_eq!(report, CleanupReport { removed: 0, kept: 0, skipped: 2 });
        assert_eq!(fs::read_to_string(&outside_file).expect("outside file"), "precious");
        assert_eq!(fs::read_to_string(&outside_nested).expect("outside nested"), "precious too");
        assert!(fs::symlink_metadata(&link).expect("link kept").file_type().is_symlink());
        assert!(fs::symlink_metadata(&dir_link).expect("link kept").file_type().is_symlink());

        // Reading through a symlink is refused as well.
        assert!(matches!(
            store.read_to_string(link.file_name().and_then(|n| n.to_str()).expect("name")),
            Err(OutputStoreError::NotFound(_))
        ));
        assert!(matches!(store.path("out_20000101T000000_00000002"), Err(OutputStoreError::NotFound(_))));
    }
}
